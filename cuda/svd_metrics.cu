// Rank choice and reconstruction metrics on the device (cuda/svd_metrics.hpp). Sums in double;
// the definitions are those of the CPU step (docs/mri.md, "Metrics").
#include <cfloat>
#include <cmath>

#include "cuda/cuda_check.hpp"
#include "cuda/svd.hpp"
#include "cuda/svd_metrics.hpp"

namespace imflow::cuda {

namespace {

constexpr int kThreads = 256;

__device__ int rank_for(const float* s, int count, int rank, double energy) {
  if (rank >= 0) return rank;
  double total = 0.0;
  for (int l = 0; l < count; ++l) total += (double)s[l] * s[l];
  if (total <= 0.0) return 0;
  double kept = 0.0;
  for (int l = 0; l < count; ++l) {
    kept += (double)s[l] * s[l];
    if (kept >= energy * total) return l + 1;
  }
  return count;
}

__global__ void choose_k(const float* s, int count, int rank, double energy, int* ints, DeviceResults* results,
                         bool check_info) {
  if (check_info && ints[0] != 0 && results->svd_status == 0) results->svd_status = ints[0];
  ints[1] = rank_for(s, count, rank, energy);
}

__global__ void choose_k_batched(const float* s, long long stride_s, int s_count, int rank, double energy,
                                 const int* info, int* k, DeviceResults* results, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  if (info != nullptr && info[i] != 0 && results[i].svd_status == 0) results[i].svd_status = info[i];
  k[i] = rank_for(s + i * stride_s, s_count, rank, energy);
}

struct Sums {
  double diff2, norm2, lo, hi, bad;
};

__device__ __forceinline__ void accumulate(Sums& v, float original, float rebuilt) {
  const double x = original;
  if (!isfinite(x)) {
    v.bad += 1.0;
    return;
  }
  const double d = x - (double)rebuilt;
  v.diff2 += d * d;
  v.norm2 += x * x;
  v.lo = fmin(v.lo, x);
  v.hi = fmax(v.hi, x);
}

// Block reduction of `v` (blockDim.x == kThreads); the total in thread 0.
__device__ Sums block_reduce(Sums v) {
  __shared__ double sh[5][kThreads];
  sh[0][threadIdx.x] = v.diff2;
  sh[1][threadIdx.x] = v.norm2;
  sh[2][threadIdx.x] = v.lo;
  sh[3][threadIdx.x] = v.hi;
  sh[4][threadIdx.x] = v.bad;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      sh[0][threadIdx.x] += sh[0][threadIdx.x + w];
      sh[1][threadIdx.x] += sh[1][threadIdx.x + w];
      sh[2][threadIdx.x] = fmin(sh[2][threadIdx.x], sh[2][threadIdx.x + w]);
      sh[3][threadIdx.x] = fmax(sh[3][threadIdx.x], sh[3][threadIdx.x + w]);
      sh[4][threadIdx.x] += sh[4][threadIdx.x + w];
    }
    __syncthreads();
  }
  return {sh[0][0], sh[1][0], sh[2][0], sh[3][0], sh[4][0]};
}

// The metrics from the reduced sums: s_count singular values are known (r for an exact SVD;
// fewer for rank-limited solvers, whose energy then uses ||A||_F^2 from the pixels as the total).
// accept_consistent (batched solvers): a solver that reported no convergence (gesvda's info on
// rank-deficient slices, jacobi out of sweeps) is accepted when its result is self-consistent:
// the measured error ||A - A_k|| / ||A|| equals sqrt(1 - energy_kept) from its singular values
// within the accuracy bar (1e-4).
__device__ void finalize(const Sums& t, const float* s, int s_count, int r, int k, int m, int n, DeviceResults* results,
                         bool accept_consistent) {
  double* out = results->svd_metrics;
  if (t.bad > 0.0) {
    results->svd_status = kSvdNonFinite;
    out[kRank] = t.bad;
    return;
  }
  const double mn = (double)m * (double)n;
  out[kRank] = k;
  out[kSingularValues] = r;
  out[kSigma1] = (r > 0 && s_count > 0) ? (double)s[0] : 0.0;
  out[kSigmaK] = (k > 0 && k <= s_count) ? (double)s[k - 1] : 0.0;
  out[kRelError] = t.norm2 > 0.0 ? sqrt(t.diff2 / t.norm2) : 0.0;
  const double mse = t.diff2 / mn;
  double peak = t.hi - t.lo;
  if (peak == 0.0) peak = fmax(fabs(t.hi), fabs(t.lo));
  out[kPsnr] = mse > 0.0 ? 10.0 * log10(peak * peak / mse) : (double)INFINITY;
  double total = 0.0, kept = 0.0;
  for (int l = 0; l < s_count; ++l) {
    total += (double)s[l] * s[l];
    if (l < k) kept += (double)s[l] * s[l];
  }
  if (s_count < r) total = t.norm2;  // the spectrum's tail is unknown: ||A||_F^2 is the total
  out[kEnergyKept] = total > 0.0 ? (s_count < r ? fmin(kept / total, 1.0) : kept / total) : 1.0;
  out[kCompression] = (double)k * ((double)m + (double)n + 1.0) / mn;
  if (accept_consistent && results->svd_status > 0 &&
      fabs(sqrt(fmax(0.0, 1.0 - out[kEnergyKept])) - out[kRelError]) <= 1e-4) {
    results->svd_status = 0;
  }
}

__global__ void metrics_kernel(const float* __restrict__ a, const float* __restrict__ b, long long n,
                               double* __restrict__ partials) {
  Sums v{0.0, 0.0, DBL_MAX, -DBL_MAX, 0.0};
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    accumulate(v, a[i], b[i]);
  }
  const Sums t = block_reduce(v);
  if (threadIdx.x == 0) {
    double* p = partials + blockIdx.x * 5;
    p[0] = t.diff2, p[1] = t.norm2, p[2] = t.lo, p[3] = t.hi, p[4] = t.bad;
  }
}

__global__ void metrics_finalize(const double* __restrict__ partials, int blocks, const float* __restrict__ s,
                                 int s_count, int r, const int* ints, int m, int n, DeviceResults* results) {
  Sums v{0.0, 0.0, DBL_MAX, -DBL_MAX, 0.0};
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    const double* p = partials + b * 5;
    v.diff2 += p[0];
    v.norm2 += p[1];
    v.lo = fmin(v.lo, p[2]);
    v.hi = fmax(v.hi, p[3]);
    v.bad += p[4];
  }
  const Sums t = block_reduce(v);
  if (threadIdx.x == 0) finalize(t, s, s_count, r, ints[1], m, n, results, false);
}

__global__ void metrics_batched_kernel(const float* __restrict__ a, const float* __restrict__ b, int m, int n,
                                       const float* __restrict__ s, long long stride_s, int s_count,
                                       const int* __restrict__ k, const int* __restrict__ full_spectrum,
                                       DeviceResults* results) {
  const long long pixels = (long long)m * n, offset = blockIdx.x * pixels;
  Sums v{0.0, 0.0, DBL_MAX, -DBL_MAX, 0.0};
  for (long long i = threadIdx.x; i < pixels; i += blockDim.x) accumulate(v, a[offset + i], b[offset + i]);
  const Sums t = block_reduce(v);
  if (threadIdx.x == 0) {
    const int r = m < n ? m : n;
    const int known = full_spectrum != nullptr && full_spectrum[blockIdx.x] != 0 ? r : s_count;
    finalize(t, s + blockIdx.x * stride_s, known, r, k[blockIdx.x], m, n, results + blockIdx.x, true);
  }
}

}  // namespace

void enqueue_choose_k(const float* s, int count, int rank, double energy, int* ints, DeviceResults* results,
                      bool check_info, cudaStream_t stream) {
  choose_k<<<1, 1, 0, stream>>>(s, count, rank, energy, ints, results, check_info);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

void enqueue_metrics(const float* a, const float* b, long long n, double* partials, const float* s, int s_count, int r,
                     const int* ints, int m, int n_cols, DeviceResults* results, cudaStream_t stream) {
  const int blocks = static_cast<int>(std::max<long long>(1, std::min<long long>(kMetricsMaxBlocks, (n + 2047) / 2048)));
  metrics_kernel<<<blocks, kThreads, 0, stream>>>(a, b, n, partials);
  IMFLOW_CUDA_CHECK_LAUNCH();
  metrics_finalize<<<1, kThreads, 0, stream>>>(partials, blocks, s, s_count, r, ints, m, n_cols, results);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

void enqueue_choose_k_batched(const float* s, long long stride_s, int s_count, int rank, double energy, const int* info,
                              int* k, DeviceResults* results, int count, cudaStream_t stream) {
  if (count <= 0) return;
  choose_k_batched<<<(count + 127) / 128, 128, 0, stream>>>(s, stride_s, s_count, rank, energy, info, k, results, count);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

void enqueue_metrics_batched(const float* a, const float* b, int m, int n, const float* s, long long stride_s,
                             int s_count, const int* k, DeviceResults* results, int count, cudaStream_t stream,
                             const int* full_spectrum) {
  if (count <= 0) return;
  metrics_batched_kernel<<<count, kThreads, 0, stream>>>(a, b, m, n, s, stride_s, s_count, k, full_spectrum, results);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
