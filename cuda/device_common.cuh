// Device helpers shared by the kernels: order-preserving float keys, grid-stride loops with
// 16-byte loads, and launch-size helpers.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace imflow::cuda::detail {

// Order-preserving map of float bits to uint32 (a < b  <=>  key(a) < key(b), for non-NaN).
__device__ __forceinline__ uint32_t float_key(float v) {
  const uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ float key_float(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k);
}

// Calls f(value) for image[0..n), grid-stride, float4 loads (image must be 16-byte aligned,
// as cudaMalloc memory is).
template <typename F>
__device__ __forceinline__ void for_each_value(const float* __restrict__ image, int64_t n, F&& f) {
  const int64_t n4 = n / 4;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t start = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const float4* __restrict__ image4 = reinterpret_cast<const float4*>(image);
  for (int64_t i = start; i < n4; i += stride) {
    const float4 v = __ldg(image4 + i);
    f(v.x);
    f(v.y);
    f(v.z);
    f(v.w);
  }
  for (int64_t i = n4 * 4 + start; i < n; i += stride) f(__ldg(image + i));
}

inline int blocks_for(int64_t n, int threads, int64_t max_blocks = 1 << 20) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > max_blocks) blocks = max_blocks;
  return static_cast<int>(blocks);
}

}  // namespace imflow::cuda::detail
