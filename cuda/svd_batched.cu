// Batched SVD reconstruction (cuda/svd_batched.hpp). Both solvers factor the tall orientation
// D (M = max(m, n) rows, N = min(m, n) columns: D = A when m >= n, else A^T):
// - gesvda: cusolverDnSgesvdaStridedBatched (eigenvectors of the Gram matrix; measured as
//   accurate as float64 LAPACK on the MRI slices, docs/mri.md) gives U_D, s, V_D for the first
//   k_max components; a tall image is transposed into column-major first. The images it reports
//   as not converged (info > 0: nearly empty or rank-deficient slices) are solved again in the
//   same stream by the Jacobi kernel (redo_only), their V_D = D^T U_D / s (gesvda_fallback).
// - jacobi: gives Q (the first k_max left singular vectors of D) and every s; the other factor
//   is the projection P = D^T Q (one strided-batched GEMM), so A_k = Q P^T with unit weights.

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/linear_algebra.hpp"
#include "cuda/reconstruct.hpp"
#include "cuda/svd_batched.hpp"
#include "cuda/svd_jacobi.hpp"
#include "cuda/svd_metrics.hpp"

namespace imflow::cuda {

struct SvdBatchState {
  explicit SvdBatchState(cudaStream_t stream_) : stream(stream_) {
    IMFLOW_CUSOLVER_CHECK(cusolver().create(&solver));
    IMFLOW_CUSOLVER_CHECK(cusolver().set_stream(solver, stream));
    IMFLOW_CUBLAS_CHECK(cublas().create(&blas));
    IMFLOW_CUBLAS_CHECK(cublas().set_stream(blas, stream));
  }
  ~SvdBatchState() {
    if (blas) cublas().destroy(blas);
    if (solver) cusolver().destroy(solver);
  }
  SvdBatchState(const SvdBatchState&) = delete;
  SvdBatchState& operator=(const SvdBatchState&) = delete;

  cudaStream_t stream;
  cusolverDnHandle_t solver = nullptr;
  cublasHandle_t blas = nullptr;
  DeviceBuffer<float> tall, u, v, s, work, jacobi_work, ones, scaled;
  DeviceBuffer<int> info, fallback_info, redone, k;
  int lwork = 0;
  int cached_m = -1, cached_n = -1, cached_count = -1, cached_k = -1;
  int ones_filled = 0;
  bool force_fallback = false;  // test hook
  SvdBatchSpectrum last;
};

namespace {

// Column-major copy (m x n, ld m) of each row-major m x n image.
__global__ void transpose_batch(const float* __restrict__ in, float* __restrict__ out, int m, int n) {
  __shared__ float tile[32][33];
  const long long offset = (long long)blockIdx.z * m * n;
  const int j0 = blockIdx.x * 32, i0 = blockIdx.y * 32;
  for (int r = threadIdx.y; r < 32; r += blockDim.y) {
    const int i = i0 + r, j = j0 + threadIdx.x;
    if (i < m && j < n) tile[r][threadIdx.x] = in[offset + (long long)i * n + j];
  }
  __syncthreads();
  for (int c = threadIdx.y; c < 32; c += blockDim.y) {
    const int j = j0 + c, i = i0 + threadIdx.x;
    if (i < m && j < n) out[offset + i + (long long)j * m] = tile[threadIdx.x][c];
  }
}

// Per image (one block): components whose singular value is negligible (<= 1e-6 ||A||_F, which
// also covers an all-zero image) or whose vectors are not finite get zero vectors, so rank-
// deficient slices (gesvda's U = A V / s for s ~ 0, jacobi's noise-level columns) add nothing but
// round-off to the reconstruction; the singular values themselves are kept for the metrics.
// Dropping them changes A_k by at most sqrt(k) 1e-6 ||A||_F.
__global__ void drop_negligible(const float* __restrict__ images, long long pixels, const float* __restrict__ s,
                                long long stride_s, int k_max, float* u, int ldu, long long stride_u, float* v, int ldv,
                                long long stride_v) {
  __shared__ double partial[256];
  __shared__ double threshold;
  const float* image = images + blockIdx.x * pixels;
  double sum = 0.0;
  for (long long i = threadIdx.x; i < pixels; i += blockDim.x) {
    const double x = image[i];
    if (isfinite(x)) sum += x * x;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int w = 128; w > 0; w /= 2) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) threshold = 1e-6 * sqrt(partial[0]);
  __syncthreads();
  const float* sb = s + blockIdx.x * stride_s;
  float* ub = u + blockIdx.x * stride_u;
  float* vb = v != nullptr ? v + blockIdx.x * stride_v : nullptr;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int l = warp; l < k_max; l += warps) {
    bool finite = isfinite(sb[l]);
    for (int i = lane; i < ldu; i += 32) finite = finite && isfinite(ub[i + (long long)l * ldu]);
    if (vb != nullptr)
      for (int j = lane; j < ldv; j += 32) finite = finite && isfinite(vb[j + (long long)l * ldv]);
    finite = __all_sync(0xffffffffu, finite);
    if (finite && (double)sb[l] > threshold) continue;
    for (int i = lane; i < ldu; i += 32) ub[i + (long long)l * ldu] = 0.0f;
    if (vb != nullptr)
      for (int j = lane; j < ldv; j += 32) vb[j + (long long)l * ldv] = 0.0f;
  }
}

// For each image gesvda did not converge on (info[b] != 0), after the Jacobi kernel has replaced
// its U_D (M x k, ld M) and s: V_D = D^T U_D / s (zero for s = 0), and the image's status
// becomes the Jacobi kernel's; redone[b] says which images were redone (their whole spectrum is
// known). D[i, j] is image[i n + j] when m >= n, image[j n + i] otherwise.
__global__ void gesvda_fallback(const float* __restrict__ images, int m, int n, int k_max, const float* __restrict__ u,
                                long long su, const float* __restrict__ s, float* v, long long sv, int* info,
                                const int* __restrict__ fallback_info, int* redone) {
  const int b = blockIdx.x;
  const bool redo = info[b] != 0;
  __syncthreads();  // every thread has read info[b] before thread 0 may overwrite it
  if (threadIdx.x == 0) redone[b] = redo ? 1 : 0;
  if (!redo) return;
  const int M = m >= n ? m : n, N = m >= n ? n : m;
  const float* image = images + (long long)b * m * n;
  const float* ub = u + b * su;
  const float* sb = s + (long long)b * N;
  float* vb = v + b * sv;
  for (int idx = threadIdx.x; idx < N * k_max; idx += blockDim.x) {
    const int j = idx % N, l = idx / N;
    double sum = 0.0;
    for (int i = 0; i < M; ++i) {
      const float d = m >= n ? image[(long long)i * n + j] : image[(long long)j * n + i];
      sum += (double)(isfinite(d) ? d : 0.0f) * ub[i + (long long)l * M];
    }
    const float sigma = sb[l];
    vb[j + (long long)l * N] = sigma > 0.0f ? static_cast<float>(sum / sigma) : 0.0f;
  }
  __syncthreads();
  if (threadIdx.x == 0) info[b] = fallback_info[b];
}

__global__ void mark_all(int* info, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) info[i] = 1;
}

__global__ void fill(float* out, int count, float value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = value;
}

// The Jacobi kernel's arguments for `job`: Q into st.u (k_max columns), every singular value into
// st.s, status into st.info (the global working matrix when shared memory cannot hold it).
JacobiBatchArgs jacobi_args(SvdBatchState& st, const SvdBatchJob& job, int k_max, size_t max_shared_optin) {
  JacobiBatchArgs a;
  a.images = job.images;
  a.m = job.m;
  a.n = job.n;
  a.count = job.count;
  a.k_out = k_max;
  a.q = st.u.data();
  a.s = st.s.data();
  a.info = st.info.data();
  if (jacobi_needs_global_work(job.m, job.n, max_shared_optin)) {
    const int M = std::max(job.m, job.n), N = std::min(job.m, job.n);
    st.jacobi_work.reserve(static_cast<size_t>(job.count) * (M + 1) * N);
    a.global_work = st.jacobi_work.data();
  }
  return a;
}

}  // namespace

void force_gesvda_fallback(std::shared_ptr<SvdBatchState>& state, cudaStream_t stream, bool on) {
  if (!state || state->stream != stream) state = std::make_shared<SvdBatchState>(stream);
  state->force_fallback = on;
}

bool is_batched_solver(SvdSolver solver) { return solver == SvdSolver::gesvda || solver == SvdSolver::jacobi; }

SvdBatchSpectrum last_batch_spectrum(const std::shared_ptr<SvdBatchState>& state) {
  return state ? state->last : SvdBatchSpectrum{};
}

void svd_reconstruct_batched(std::shared_ptr<SvdBatchState>& state, cudaStream_t stream, size_t max_shared_optin,
                             const SvdOptions& o, const SvdBatchJob& job) {
  const int m = job.m, n = job.n, count = job.count;
  if (count <= 0) return;
  if (m <= 0 || n <= 0) throw std::runtime_error("SVD of an empty image");
  if (!is_batched_solver(o.solver)) {
    throw std::invalid_argument(std::string("svd_solver ") + svd_solver_name(o.solver) + " is not a batched solver");
  }
  if (static_cast<long long>(m) * n * count > (1LL << 31) - 1) {
    throw std::runtime_error("batch of " + std::to_string(count) + " " + std::to_string(n) + "x" + std::to_string(m) +
                             " images too large for the 32-bit cuSOLVER API");
  }
  const int M = std::max(m, n), N = std::min(m, n);
  int64_t rank = o.rank;
  if (rank > N) {
    if (!o.clip_rank) {
      throw std::runtime_error("rank " + std::to_string(rank) + " is larger than min(m, n) = " + std::to_string(N) +
                               " of this " + std::to_string(n) + "x" + std::to_string(m) +
                               " slice (set clip_rank: true to clip)");
    }
    rank = N;
  }
  // rank: k needs the first k components; the energy rule needs all of them.
  const int k_max = rank > 0 ? static_cast<int>(rank) : N;
  if (!state || state->stream != stream) state = std::make_shared<SvdBatchState>(stream);
  SvdBatchState& st = *state;
  const long long mn = static_cast<long long>(m) * n;
  st.u.reserve(static_cast<size_t>(count) * M * k_max);
  st.v.reserve(static_cast<size_t>(count) * N * k_max);
  st.s.reserve(static_cast<size_t>(count) * N);
  st.info.reserve(count);
  st.k.reserve(count);

  ReconstructArgs args;
  args.m = m;
  args.n = n;
  args.k_device = st.k.data();
  args.stride_k = 1;
  args.k_max = k_max;
  args.out = job.out;
  args.ldo = n;
  args.count = count;
  args.stride_out = mn;
  long long s_stride = 0;
  int s_count = 0;
  // Per image: the tall factor (U_D, or Q) M x k_max, the short one (V_D, or P) N x k_max.
  const long long su = static_cast<long long>(M) * k_max, sv = static_cast<long long>(N) * k_max;

  if (o.solver == SvdSolver::gesvda) {
    const float* d = job.images;  // m < n: the row-major buffer is D = A^T, column-major n x m
    if (m >= n) {
      st.tall.reserve(static_cast<size_t>(count) * mn);
      transpose_batch<<<dim3((n + 31) / 32, (m + 31) / 32, count), dim3(32, 8), 0, stream>>>(job.images, st.tall.data(),
                                                                                             m, n);
      IMFLOW_CUDA_CHECK_LAUNCH();
      d = st.tall.data();
    }
    if (st.cached_m != m || st.cached_n != n || st.cached_count != count || st.cached_k != k_max) {
      IMFLOW_CUSOLVER_CHECK(cusolver().sgesvda_strided_batched_buffer_size(
          st.solver, CUSOLVER_EIG_MODE_VECTOR, k_max, M, N, d, M, mn, st.s.data(), N, st.u.data(), M, su, st.v.data(), N,
          sv, &st.lwork, count));
      st.work.reserve(static_cast<size_t>(std::max(st.lwork, 1)));
      st.cached_m = m, st.cached_n = n, st.cached_count = count, st.cached_k = k_max;
    }
    // h_RnrmF = nullptr: no residual, so the call stays asynchronous.
    IMFLOW_CUSOLVER_CHECK(cusolver().sgesvda_strided_batched(st.solver, CUSOLVER_EIG_MODE_VECTOR, k_max, M, N, d, M, mn,
                                                          st.s.data(), N, st.u.data(), M, su, st.v.data(), N, sv,
                                                          st.work.data(), st.lwork, st.info.data(), nullptr, count));
    if (st.force_fallback) {
      mark_all<<<(count + 255) / 256, 256, 0, stream>>>(st.info.data(), count);
      IMFLOW_CUDA_CHECK_LAUNCH();
    }
    st.fallback_info.reserve(count);
    JacobiBatchArgs redo = jacobi_args(st, job, k_max, max_shared_optin);
    redo.info = st.fallback_info.data();
    redo.redo_only = st.info.data();
    jacobi_svd_batched(redo, max_shared_optin, stream);
    st.redone.reserve(count);
    gesvda_fallback<<<count, 256, 0, stream>>>(job.images, m, n, k_max, st.u.data(), su, st.s.data(), st.v.data(), sv,
                                               st.info.data(), st.fallback_info.data(), st.redone.data());
    IMFLOW_CUDA_CHECK_LAUNCH();
    drop_negligible<<<count, 256, 0, stream>>>(job.images, mn, st.s.data(), N, k_max, st.u.data(), M, su, st.v.data(), N,
                                                sv);
    IMFLOW_CUDA_CHECK_LAUNCH();
    args.s = st.s.data();
    args.stride_s = N;
    s_stride = N;
    s_count = k_max;
  } else {
    const JacobiBatchArgs ja = jacobi_args(st, job, k_max, max_shared_optin);
    jacobi_svd_batched(ja, max_shared_optin, stream);
    drop_negligible<<<count, 256, 0, stream>>>(job.images, mn, st.s.data(), N, k_max, st.u.data(), M, su, nullptr, 0,
                                                0);
    IMFLOW_CUDA_CHECK_LAUNCH();
    // P = D^T Q with the row-major buffer B (column-major n x m, ld n) = A^T:
    // m >= n: Q = U_A (m x k), P = A^T Q = B Q (n x k); m < n: Q = V_A (n x k), P = A Q = B^T Q (m x k).
    const float one = 1.0f, zero = 0.0f;
    if (m >= n) {
      IMFLOW_CUBLAS_CHECK(cublas().sgemm_strided_batched(st.blas, CUBLAS_OP_N, CUBLAS_OP_N, n, k_max, m, &one, job.images, n,
                                                    mn, st.u.data(), m, su, &zero, st.v.data(), n, sv, count));
    } else {
      IMFLOW_CUBLAS_CHECK(cublas().sgemm_strided_batched(st.blas, CUBLAS_OP_T, CUBLAS_OP_N, m, k_max, n, &one, job.images, n,
                                                    mn, st.u.data(), n, su, &zero, st.v.data(), m, sv, count));
    }
    if (st.ones_filled < k_max) {
      st.ones.reserve(k_max);
      fill<<<(k_max + 255) / 256, 256, 0, stream>>>(st.ones.data(), k_max, 1.0f);
      IMFLOW_CUDA_CHECK_LAUNCH();
      st.ones_filled = k_max;
    }
    args.s = st.ones.data();
    args.stride_s = 0;
    s_stride = N;
    s_count = N;
  }
  // A = D (m >= n): U_A is the tall factor, V_A the short one. A = D^T: the other way round.
  args.u = m >= n ? st.u.data() : st.v.data();
  args.v = m >= n ? st.v.data() : st.u.data();
  args.ldu = m;
  args.ldv = n;
  args.stride_u = m >= n ? su : sv;
  args.stride_v = m >= n ? sv : su;
  const int k_rank = rank > 0 ? static_cast<int>(rank) : -1;
  enqueue_choose_k_batched(st.s.data(), s_stride, s_count, k_rank, o.energy, st.info.data(), st.k.data(), job.results,
                           count, stream);
  if (o.kernel == ReconstructKernel::cublas) st.scaled.reserve(static_cast<size_t>(count) * m * k_max);
  reconstruct(o.kernel, args, stream, st.blas, st.scaled.data(), ReconstructConfig{});
  enqueue_metrics_batched(job.images, job.out, m, n, st.s.data(), s_stride, s_count, st.k.data(), job.results, count,
                          stream, o.solver == SvdSolver::gesvda ? st.redone.data() : nullptr);
  st.last = {st.s.data(), s_stride, s_count};
}

}  // namespace imflow::cuda
