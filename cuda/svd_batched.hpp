// Rank-k SVD reconstruction of a batch of same-shape images in a few launches: the batched
// solver (cuSOLVER gesvdaStridedBatched, or our one-sided Jacobi, cuda/svd_jacobi.hpp), the rank
// per image, a batched reconstruction kernel (cuda/reconstruct.hpp) and the metrics per image.
#pragma once
#include <cuda_runtime_api.h>

#include <memory>

#include "cuda/gpu_context.hpp"
#include "cuda/svd.hpp"

namespace imflow::cuda {

struct SvdBatchState;  // per stream: library handles, buffers and workspace sizes (grow-only)

// `count` row-major m x n images, contiguous (image b at b * m * n), read only; the
// reconstructions go to `out` (same layout); metrics and status to results[b].
struct SvdBatchJob {
  const float* images = nullptr;
  float* out = nullptr;
  int m = 0, n = 0, count = 0;
  DeviceResults* results = nullptr;
};

bool is_batched_solver(SvdSolver solver);

// Enqueue the whole job on `stream` (never synchronizes). `state` is created on first use and
// must only be used with this stream. Throws before enqueueing anything for a rank above
// min(m, n) without clip_rank, a solver that is not batched, or randomized options.
void svd_reconstruct_batched(std::shared_ptr<SvdBatchState>& state, cudaStream_t stream, size_t max_shared_optin,
                             const SvdOptions& options, const SvdBatchJob& job);

// Test hooks: the last job's singular values (device, `stride` floats apart, `count` known per
// image: r for jacobi, the computed rank for gesvda).
struct SvdBatchSpectrum {
  const float* s = nullptr;
  long long stride = 0;
  int count = 0;
};
SvdBatchSpectrum last_batch_spectrum(const std::shared_ptr<SvdBatchState>& state);
// Test hook: gesvda treats every image as not converged, so the Jacobi fallback solves them all.
void force_gesvda_fallback(std::shared_ptr<SvdBatchState>& state, cudaStream_t stream, bool on);

}  // namespace imflow::cuda
