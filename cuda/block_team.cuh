// A whole GPU block as a pixel team (imflow/kernels/pixel_team.hpp), for sources whose apertures
// span too many pixels for one warp: warps reduce with shuffles, then every thread adds the
// warps' partials from shared memory in the same order, so all hold the same value. Every thread
// of the block must call sum() and bit_or() together.
#pragma once
#include <cstdint>

#include "cuda/warp_team.cuh"
#include "imflow/kernels/host_device.hpp"

namespace imflow::cuda {

template <int kThreads>
struct BlockTeam {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "BlockTeam: whole warps, at most 1024 threads");
  static constexpr int size = kThreads;
  static constexpr int kWarps = kThreads / 32;
  // Host versions exist only so the host side of the shared templates compiles; they never run.
  IMFLOW_HOST_DEVICE static int rank() {
#ifdef __CUDA_ARCH__
    return static_cast<int>(threadIdx.x);
#else
    return 0;
#endif
  }
  template <typename T>
  IMFLOW_HOST_DEVICE static T sum(T v) {
#ifdef __CUDA_ARCH__
    __shared__ T partial[kWarps];
    v = WarpTeam::sum(v);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    T total = partial[0];
    for (int w = 1; w < kWarps; ++w) total += partial[w];
    __syncthreads();  // partial[] is free for the next call
    return total;
#else
    return v;
#endif
  }
  IMFLOW_HOST_DEVICE static int32_t bit_or(int32_t v) {
#ifdef __CUDA_ARCH__
    __shared__ unsigned partial[kWarps];
    const auto warp = static_cast<unsigned>(WarpTeam::bit_or(v));
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = warp;
    __syncthreads();
    unsigned total = 0;
    for (int w = 0; w < kWarps; ++w) total |= partial[w];
    __syncthreads();
    return static_cast<int32_t>(total);
#else
    return v;
#endif
  }
};

}  // namespace imflow::cuda
