// Batched one-sided Jacobi SVD (cuda/svd_jacobi.hpp): one 1024-thread block per image. A round
// of the round-robin (circle) ordering holds N/2 disjoint column pairs, one warp per pair: the
// three dot products in double, the rotation that makes the pair orthogonal, then a barrier.
// Sweeps repeat until no pair needs a rotation (|a_i.a_j| <= tol sqrt(a_i.a_i a_j.a_j)).
#include <cfloat>
#include <cmath>

#include "cuda/cuda_check.hpp"
#include "cuda/svd_jacobi.hpp"

namespace imflow::cuda {

namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

struct Shape {
  int M, N, ld;  // tall orientation: M rows, N columns, leading dimension of the working matrix
};

Shape shape_of(int m, int n) {
  Shape s;
  s.M = m >= n ? m : n;
  s.N = m >= n ? n : m;
  s.ld = s.M % 2 == 0 ? s.M + 1 : s.M;  // odd: no bank conflicts when loading rows of A
  return s;
}

// [norms: N doubles | ranks: N ints | flags: 4 ints | working matrix (shared mode)].
__host__ __device__ size_t small_bytes(const Shape& s) { return static_cast<size_t>(s.N) * (sizeof(double) + sizeof(int)) + 16; }
__host__ __device__ size_t matrix_bytes(const Shape& s) { return static_cast<size_t>(s.ld) * s.N * sizeof(float); }

__device__ __forceinline__ double warp_sum(double v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void __launch_bounds__(kThreads, 1) jacobi_kernel(JacobiBatchArgs a, Shape sh, bool global_work) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int M = sh.M, N = sh.N, ld = sh.ld;
  double* norms = reinterpret_cast<double*>(smem);
  int* ranks = reinterpret_cast<int*>(norms + N);
  int* flags = ranks + N;
  float* w = global_work ? a.global_work + static_cast<size_t>(blockIdx.x) * ld * N
                         : reinterpret_cast<float*>(smem + small_bytes(sh));
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int b = blockIdx.x;
  if (a.redo_only != nullptr && a.redo_only[b] == 0) return;  // block-uniform: before any barrier
  const bool tall = a.m >= a.n;

  // Load D (the tall orientation of the row-major image) column-major; non-finite -> 0.
  const float* image = a.images + static_cast<size_t>(b) * a.m * a.n;
  const int total = a.m * a.n;
  for (int idx = tid; idx < total; idx += kThreads) {
    float x = image[idx];
    if (!isfinite(x)) x = 0.0f;
    const int i = idx / a.n, j = idx - (idx / a.n) * a.n;
    const int p = tall ? i : j, q = tall ? j : i;
    w[p + static_cast<size_t>(q) * ld] = x;
  }
  __syncthreads();

  // 4 sqrt(M) eps: LAPACK sgesvj's sqrt(M) eps was not always reached in float storage (slices
  // with many near-zero singular values kept rotating for 40 sweeps).
  const double tol = 4.0 * sqrt((double)M) * (double)FLT_EPSILON;
  const int even = N + (N & 1);  // an odd N gets a dummy column (its pairs are skipped)
  bool converged = N < 2;
  int sweep = 0;
  for (; sweep < a.max_sweeps && !converged; ++sweep) {
    if (tid == 0) flags[0] = 0;
    __syncthreads();
    for (int round = 0; round < even - 1; ++round) {
      for (int k = warp; k < even / 2; k += kWarps) {
        int p, q;
        if (k == 0) {
          p = round;
          q = even - 1;
        } else {
          p = (round + k) % (even - 1);
          q = (round - k + even - 1) % (even - 1);
        }
        if (p >= N || q >= N) continue;  // warp-uniform
        float* x = w + static_cast<size_t>(p) * ld;
        float* y = w + static_cast<size_t>(q) * ld;
        double alpha = 0.0, beta = 0.0, gamma = 0.0;
        for (int i = lane; i < M; i += 32) {
          const double xi = x[i], yi = y[i];
          alpha += xi * xi;
          beta += yi * yi;
          gamma += xi * yi;
        }
        alpha = warp_sum(alpha);
        beta = warp_sum(beta);
        gamma = warp_sum(gamma);
        if (alpha == 0.0 || beta == 0.0 || fabs(gamma) <= tol * sqrt(alpha * beta)) continue;
        const double zeta = (beta - alpha) / (2.0 * gamma);
        const double t = (zeta >= 0.0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
        const double c = 1.0 / sqrt(1.0 + t * t);
        const float cf = static_cast<float>(c), sf = static_cast<float>(c * t);
        for (int i = lane; i < M; i += 32) {
          const float xi = x[i], yi = y[i];
          x[i] = cf * xi - sf * yi;
          y[i] = sf * xi + cf * yi;
        }
        if (lane == 0) flags[0] = 1;
      }
      __syncthreads();
    }
    converged = flags[0] == 0;
    __syncthreads();  // every thread has read the flag before thread 0 clears it
  }

  // Column norms are the singular values; rank them (descending, ties by index).
  for (int j = warp; j < N; j += kWarps) {
    const float* x = w + static_cast<size_t>(j) * ld;
    double sum = 0.0;
    for (int i = lane; i < M; i += 32) sum += (double)x[i] * x[i];
    sum = warp_sum(sum);
    if (lane == 0) norms[j] = sqrt(sum);
  }
  __syncthreads();
  for (int j = tid; j < N; j += kThreads) {
    const double v = norms[j];
    int rank = 0;
    for (int i = 0; i < N; ++i) {
      const double u = norms[i];
      rank += (u > v || (u == v && i < j)) ? 1 : 0;
    }
    ranks[j] = rank;
    a.s[static_cast<size_t>(b) * N + rank] = static_cast<float>(v);
  }
  __syncthreads();
  float* q_out = a.q + static_cast<size_t>(b) * M * a.k_out;
  for (int j = warp; j < N; j += kWarps) {
    const int r = ranks[j];
    if (r >= a.k_out) continue;
    const double norm = norms[j];
    const float inverse = norm > 0.0 ? static_cast<float>(1.0 / norm) : 0.0f;
    const float* x = w + static_cast<size_t>(j) * ld;
    for (int i = lane; i < M; i += 32) q_out[i + static_cast<size_t>(r) * M] = x[i] * inverse;
  }
  if (tid == 0) a.info[b] = converged ? 0 : sweep;
}

}  // namespace

bool jacobi_needs_global_work(int m, int n, size_t max_shared_optin) {
  const Shape s = shape_of(m, n);
  return small_bytes(s) + matrix_bytes(s) > max_shared_optin;
}

void jacobi_svd_batched(const JacobiBatchArgs& args, size_t max_shared_optin, cudaStream_t stream) {
  if (args.count <= 0 || args.m <= 0 || args.n <= 0) return;
  const Shape s = shape_of(args.m, args.n);
  const bool global_work = jacobi_needs_global_work(args.m, args.n, max_shared_optin);
  if (global_work && args.global_work == nullptr) {
    throw CudaError("jacobi_svd_batched: a " + std::to_string(args.m) + "x" + std::to_string(args.n) +
                        " image needs the global working buffer (shared memory holds " +
                        std::to_string(max_shared_optin) + " bytes)",
                    cudaErrorInvalidValue);
  }
  const size_t bytes = small_bytes(s) + (global_work ? 0 : matrix_bytes(s));
  // Every launch asks for the device's maximum, so concurrent launches never race on the limit.
  IMFLOW_CUDA_CHECK(cudaFuncSetAttribute(jacobi_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(max_shared_optin)));
  jacobi_kernel<<<args.count, kThreads, bytes, stream>>>(args, s, global_work);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
