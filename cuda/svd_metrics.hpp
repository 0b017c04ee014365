// The device-side rank choice (rank: k or the energy rule) and the reconstruction metrics of
// svd_reconstruct, for one image (multi-block reduction) and for a batch (one block per image);
// shared by the per-slice solvers (cuda/svd.cu) and the batched ones (cuda/svd_batched.cu).
#pragma once
#include <cuda_runtime_api.h>

#include "cuda/gpu_context.hpp"

namespace imflow::cuda {

// One image: ints[1] = k from `rank` (>= 0) or the energy rule over s[0..count); a non-zero
// ints[0] (the solver's info) into results->svd_status when check_info.
void enqueue_choose_k(const float* s, int count, int rank, double energy, int* ints, DeviceResults* results,
                      bool check_info, cudaStream_t stream);

// One image: the metrics of reconstruction `b` against original `a` (n pixels, m x n_cols) into
// results (k from ints[1]; s_count < r singular values known: energy relative to ||A||_F^2).
// `partials` holds at least kMetricsMaxBlocks * 5 doubles.
inline constexpr int kMetricsMaxBlocks = 256;
void enqueue_metrics(const float* a, const float* b, long long n, double* partials, const float* s, int s_count, int r,
                     const int* ints, int m, int n_cols, DeviceResults* results, cudaStream_t stream);

// A batch of `count` m x n images (problem i at offset i * m * n of a and b, its singular values
// at s + i * stride_s, its info at info[i] when info is not null):
// k[i] from rank (>= 0) or the energy rule over s_count values, a non-zero info[i] into
// results[i].svd_status.
void enqueue_choose_k_batched(const float* s, long long stride_s, int s_count, int rank, double energy, const int* info,
                              int* k, DeviceResults* results, int count, cudaStream_t stream);
// The metrics of every problem (k from k[i]) into results[i], one block per problem. Problem i
// has s_count singular values, or all min(m, n) when full_spectrum (if not null) has
// full_spectrum[i] != 0 (gesvda's slices redone by the Jacobi kernel).
void enqueue_metrics_batched(const float* a, const float* b, int m, int n, const float* s, long long stride_s,
                             int s_count, const int* k, DeviceResults* results, int count, cudaStream_t stream,
                             const int* full_spectrum = nullptr);

}  // namespace imflow::cuda
