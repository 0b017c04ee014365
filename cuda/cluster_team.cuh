// A cluster of GPU blocks as a pixel team (imflow/kernels/pixel_team.hpp), for the largest
// sources: each block reduces as a BlockTeam does, then every thread adds the blocks' totals from
// their shared memory (distributed shared memory, sm_90) in rank order, so all hold the same
// value. Every thread of the cluster must call sum() and bit_or() together; launch with a cluster
// of kBlocks blocks of kThreads threads (cudaLaunchAttributeClusterDimension).
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#include <cooperative_groups.h>
#endif

#include "cuda/block_team.cuh"
#include "imflow/kernels/host_device.hpp"

namespace imflow::cuda {

template <int kBlocks, int kThreads>
struct ClusterTeam {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "ClusterTeam: whole warps, at most 1024 threads a block");
  static constexpr int size = kBlocks * kThreads;
  // Host versions exist only so the host side of the shared templates compiles; they never run.
  IMFLOW_HOST_DEVICE static int rank() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return static_cast<int>(cooperative_groups::this_cluster().block_rank()) * kThreads + static_cast<int>(threadIdx.x);
#else
    return 0;
#endif
  }
  template <typename T>
  IMFLOW_HOST_DEVICE static T sum(T v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ T block_total;
    const T block = BlockTeam<kThreads>::sum(v);
    if (threadIdx.x == 0) block_total = block;
    auto cluster = cooperative_groups::this_cluster();
    cluster.sync();  // every block's total is written
    T total = *cluster.map_shared_rank(&block_total, 0);
    for (int b = 1; b < kBlocks; ++b) total += *cluster.map_shared_rank(&block_total, b);
    cluster.sync();  // every block has read them before the next call writes
    return total;
#else
    return v;
#endif
  }
  IMFLOW_HOST_DEVICE static int32_t bit_or(int32_t v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ unsigned block_bits;
    const auto block = static_cast<unsigned>(BlockTeam<kThreads>::bit_or(v));
    if (threadIdx.x == 0) block_bits = block;
    auto cluster = cooperative_groups::this_cluster();
    cluster.sync();
    unsigned bits = 0;
    for (int b = 0; b < kBlocks; ++b) bits |= *cluster.map_shared_rank(&block_bits, b);
    cluster.sync();
    return static_cast<int32_t>(bits);
#else
    return v;
#endif
  }
};

}  // namespace imflow::cuda
