// swap_float32_words: one thread per 16 bytes (four words), __byte_perm on 32-bit integers so
// that no value passes through a float register.
#include "cuda/byte_order.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_common.cuh"

namespace imflow::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint32_t swapped(uint32_t w) { return __byte_perm(w, 0, 0x0123); }

__global__ void __launch_bounds__(kThreads) swap_kernel(uint32_t* __restrict__ words, int64_t n) {
  const int64_t n4 = n / 4;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  uint4* __restrict__ quads = reinterpret_cast<uint4*>(words);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n4; i += stride) {
    uint4 q = quads[i];
    q.x = swapped(q.x);
    q.y = swapped(q.y);
    q.z = swapped(q.z);
    q.w = swapped(q.w);
    quads[i] = q;
  }
  for (int64_t i = n4 * 4 + static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    words[i] = swapped(words[i]);
  }
}

}  // namespace

void swap_float32_words(float* words, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  const int blocks = detail::blocks_for((n + 3) / 4, kThreads, 4096);
  swap_kernel<<<blocks, kThreads, 0, stream>>>(reinterpret_cast<uint32_t*>(words), n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
