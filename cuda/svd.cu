// GPU SVD reconstruction (cuda/svd.hpp): per-slot cuSOLVER/cuBLAS handles bound to the slot's
// stream, workspaces sized once per shape and reused, the rank and the metrics on the device.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cuda/linear_algebra.hpp"
#include "cuda/svd.hpp"
#include "cuda/svd_batched.hpp"
#include "cuda/svd_metrics.hpp"
#include "imflow/kernels/svd.hpp"

namespace imflow::cuda {

const char* const kSvdMetricNames[kSvdMetrics] = {"rank",   "singular_values", "sigma_1",     "sigma_k",
                                                   "rel_frobenius_error", "psnr_db", "energy_kept",
                                                   "compression_ratio"};

SvdSolver parse_svd_solver(const std::string& name) {
  if (name == "gesvdj") return SvdSolver::gesvdj;
  if (name == "gesvd") return SvdSolver::gesvd;
  if (name == "randomized") return SvdSolver::randomized;
  if (name == "gesvda") return SvdSolver::gesvda;
  if (name == "jacobi") return SvdSolver::jacobi;
  throw std::invalid_argument("unknown SVD solver '" + name + "' (gesvdj, gesvd, randomized, gesvda, jacobi)");
}

const char* svd_solver_name(SvdSolver solver) {
  switch (solver) {
    case SvdSolver::gesvdj: return "gesvdj";
    case SvdSolver::gesvd: return "gesvd";
    case SvdSolver::randomized: return "randomized";
    case SvdSolver::gesvda: return "gesvda";
    case SvdSolver::jacobi: return "jacobi";
  }
  return "?";
}

struct SvdState {
  explicit SvdState(cudaStream_t stream) {
    IMFLOW_CUSOLVER_CHECK(cusolver().create(&solver));
    IMFLOW_CUSOLVER_CHECK(cusolver().set_stream(solver, stream));
    IMFLOW_CUBLAS_CHECK(cublas().create(&blas));
    IMFLOW_CUBLAS_CHECK(cublas().set_stream(blas, stream));
    IMFLOW_CUSOLVER_CHECK(cusolver().create_gesvdj_info(&params));
    ints.reserve(4);
    partials.reserve(kMetricsMaxBlocks * 5);
  }
  ~SvdState() {
    if (params) cusolver().destroy_gesvdj_info(params);
    if (blas) cublas().destroy(blas);
    if (solver) cusolver().destroy(solver);
  }
  SvdState(const SvdState&) = delete;
  SvdState& operator=(const SvdState&) = delete;

  cusolverDnHandle_t solver = nullptr;
  cublasHandle_t blas = nullptr;
  gesvdjInfo_t params = nullptr;
  DeviceBuffer<float> a, ua, va, s, vt, work, tau, omega, y, z, small, scaled, factors;
  DeviceBuffer<int> ints;  // [0] solver info, [1] k
  DeviceBuffer<double> partials;
  PinnedBuffer<float> staging;
  // Workspace size cache: (solver, m, n, l) -> lwork.
  int cached_solver = -1;
  int64_t cached_m = -1, cached_n = -1, cached_l = -1;
  int lwork = 0;
  int64_t omega_m = -1, omega_l = -1;
  ReconstructConfig config;
  SvdFactorsView last;
  std::shared_ptr<SvdBatchState> batched;  // gesvda / jacobi on one image (a batch of one)
};

namespace {

SvdState& state_of(GpuContext& gpu) {
  if (!gpu.svd) gpu.svd = std::make_shared<SvdState>(gpu.stream);
  return *gpu.svd;
}

__global__ void set_k(int* ints, int k) {
  ints[0] = 0;
  ints[1] = k;
}

// Deterministic standard normal numbers (integer hash + Box-Muller), for the randomized sketch.
__device__ __forceinline__ unsigned hash32(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}
__global__ void gaussian_kernel(float* out, long long count, unsigned seed) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= count) return;
  const unsigned h1 = hash32((unsigned)i * 2u + seed), h2 = hash32((unsigned)i * 2u + 1u + seed * 0x9e3779b9u);
  const float u1 = ((h1 >> 8) + 1.0f) * (1.0f / 16777217.0f), u2 = (h2 >> 8) * (1.0f / 16777216.0f);
  out[i] = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

void measure(GpuContext& gpu, SvdState& st, const float* s, int s_count, int r) {
  enqueue_metrics(gpu.image.data(), gpu.image_spare.data(), gpu.size(), st.partials.data(), s, s_count, r, st.ints.data(),
                  static_cast<int>(gpu.height), static_cast<int>(gpu.width), gpu.results.data(), gpu.stream);
}

void run_reconstruct(GpuContext& gpu, SvdState& st, ReconstructKernel kernel, const float* u, int ldu, const float* s,
                     const float* v, int ldv, int k_max) {
  const int m = static_cast<int>(gpu.height), n = static_cast<int>(gpu.width);
  gpu.image_spare.reserve(static_cast<size_t>(m) * n + 4);
  ReconstructArgs args;
  args.u = u;
  args.ldu = ldu;
  args.s = s;
  args.v = v;
  args.ldv = ldv;
  args.m = m;
  args.n = n;
  args.k_device = st.ints.data() + 1;
  args.k_max = k_max;
  args.out = gpu.image_spare.data();
  args.ldo = n;
  if (kernel == ReconstructKernel::cublas) st.scaled.reserve(static_cast<size_t>(m) * std::max(k_max, 1));
  reconstruct(kernel, args, gpu.stream, st.blas, st.scaled.data(), st.config);
}

void finish(GpuContext& gpu) {
  swap(gpu.image, gpu.image_spare);
  gpu.image_modified = true;
  gpu.has_svd_metrics = true;
}

// Q of the QR of the rows x cols column-major matrix x (in place).
void orthonormalize(SvdState& st, float* x, int rows, int cols) {
  IMFLOW_CUSOLVER_CHECK(cusolver().sgeqrf(st.solver, rows, cols, x, rows, st.tau.data(), st.work.data(), st.lwork,
                                         st.ints.data() + 2));
  IMFLOW_CUSOLVER_CHECK(cusolver().sorgqr(st.solver, rows, cols, cols, x, rows, st.tau.data(), st.work.data(), st.lwork,
                                         st.ints.data() + 2));
}

}  // namespace

void svd_reconstruct(GpuContext& gpu, const SvdOptions& o) {
  DeviceGuard guard(gpu.device);
  const int64_t m64 = gpu.height, n64 = gpu.width, r64 = std::min(m64, n64);
  if (m64 <= 0 || n64 <= 0) throw std::runtime_error("SVD of an empty image");
  if (m64 * n64 > (int64_t{1} << 31) - 1) throw std::runtime_error("image too large for the 32-bit cuSOLVER API");
  int64_t rank = o.rank;
  if (rank > r64) {
    if (!o.clip_rank) {
      throw std::runtime_error("rank " + std::to_string(rank) + " is larger than min(m, n) = " + std::to_string(r64) +
                               " of this " + std::to_string(n64) + "x" + std::to_string(m64) +
                               " slice (set clip_rank: true to clip)");
    }
    rank = r64;
  }
  const int m = static_cast<int>(m64), n = static_cast<int>(n64), r = static_cast<int>(r64);
  SvdState& st = state_of(gpu);
  if (is_batched_solver(o.solver)) {
    gpu.image_spare.reserve(static_cast<size_t>(m) * n + 4);
    SvdBatchJob job;
    job.images = gpu.image.data();
    job.out = gpu.image_spare.data();
    job.m = m;
    job.n = n;
    job.count = 1;
    job.results = gpu.results.data();
    svd_reconstruct_batched(st.batched, gpu.stream, gpu.max_shared_optin, o, job);
    st.last = SvdFactorsView{};
    finish(gpu);
    return;
  }
  const int solver_id = static_cast<int>(o.solver);
  const float one = 1.0f, zero = 0.0f;
  st.ua.reserve(static_cast<size_t>(m) * r);
  st.va.reserve(static_cast<size_t>(n) * r);
  st.s.reserve(r);
  st.a.reserve(static_cast<size_t>(m) * n);

  if (o.solver == SvdSolver::gesvdj) {
    // The row-major m x n image is the column-major n x m matrix B = A^T = U_B S V_B^T (economy):
    // A's U is V_B (m x r), A's V is U_B (n x r); no transposes.
    if (st.cached_solver != solver_id || st.cached_m != m || st.cached_n != n) {
      IMFLOW_CUSOLVER_CHECK(cusolver().sgesvdj_buffer_size(st.solver, CUSOLVER_EIG_MODE_VECTOR, 1, n, m, st.a.data(), n,
                                                         st.s.data(), st.va.data(), n, st.ua.data(), m, &st.lwork,
                                                         st.params));
      st.work.reserve(static_cast<size_t>(std::max(st.lwork, 1)));
      st.cached_solver = solver_id, st.cached_m = m, st.cached_n = n, st.cached_l = -1;
    }
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(st.a.data(), gpu.image.data(), sizeof(float) * m * n, cudaMemcpyDeviceToDevice,
                                      gpu.stream));
    IMFLOW_CUSOLVER_CHECK(cusolver().sgesvdj(st.solver, CUSOLVER_EIG_MODE_VECTOR, 1, n, m, st.a.data(), n, st.s.data(),
                                            st.va.data(), n, st.ua.data(), m, st.work.data(), st.lwork, st.ints.data(),
                                            st.params));
  } else if (o.solver == SvdSolver::gesvd) {
    // gesvd needs rows >= columns: factor B = A^T (n x m) when n >= m, else A itself (transposed
    // with geam); the VT it returns is transposed into the U/V layout with geam.
    const int rows = std::max(m, n), cols = r;
    if (st.cached_solver != solver_id || st.cached_m != m || st.cached_n != n) {
      IMFLOW_CUSOLVER_CHECK(cusolver().sgesvd_buffer_size(st.solver, rows, cols, &st.lwork));
      st.work.reserve(static_cast<size_t>(std::max(st.lwork, 1)));
      st.cached_solver = solver_id, st.cached_m = m, st.cached_n = n, st.cached_l = -1;
    }
    st.vt.reserve(static_cast<size_t>(r) * r);
    signed char job = 'S';
    if (n >= m) {
      IMFLOW_CUDA_CHECK(cudaMemcpyAsync(st.a.data(), gpu.image.data(), sizeof(float) * m * n, cudaMemcpyDeviceToDevice,
                                        gpu.stream));
      IMFLOW_CUSOLVER_CHECK(cusolver().sgesvd(st.solver, job, job, n, m, st.a.data(), n, st.s.data(), st.va.data(), n,
                                             st.vt.data(), r, st.work.data(), st.lwork, nullptr, st.ints.data()));
      IMFLOW_CUBLAS_CHECK(cublas().sgeam(st.blas, CUBLAS_OP_T, CUBLAS_OP_N, m, r, &one, st.vt.data(), r, &zero,
                                      st.ua.data(), m, st.ua.data(), m));
    } else {
      IMFLOW_CUBLAS_CHECK(cublas().sgeam(st.blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, gpu.image.data(), n, &zero,
                                      st.a.data(), m, st.a.data(), m));
      IMFLOW_CUSOLVER_CHECK(cusolver().sgesvd(st.solver, job, job, m, n, st.a.data(), m, st.s.data(), st.ua.data(), m,
                                             st.vt.data(), r, st.work.data(), st.lwork, nullptr, st.ints.data()));
      IMFLOW_CUBLAS_CHECK(cublas().sgeam(st.blas, CUBLAS_OP_T, CUBLAS_OP_N, n, r, &one, st.vt.data(), r, &zero,
                                      st.va.data(), n, st.va.data(), n));
    }
  } else {
    if (rank <= 0) throw std::runtime_error("svd_solver randomized needs rank: k (not energy)");
    // Halko et al.: M = A^T (n x m, the image as stored); sketch Y = M Omega (n x l), power
    // iterations, Q = orth(Y), B^T = M^T Q (m x l), SVD B^T = Ub S Vb^T, so A ~ Ub S (Q Vb)^T.
    const int l = static_cast<int>(std::min<int64_t>(rank + o.oversampling, r));
    st.y.reserve(static_cast<size_t>(n) * l);
    st.z.reserve(static_cast<size_t>(m) * l);
    st.small.reserve(static_cast<size_t>(l) * l);
    st.tau.reserve(l);
    if (st.cached_solver != solver_id || st.cached_m != m || st.cached_n != n || st.cached_l != l) {
      int w = 0, best = 1;
      IMFLOW_CUSOLVER_CHECK(cusolver().sgeqrf_buffer_size(st.solver, n, l, st.y.data(), n, &w));
      best = std::max(best, w);
      IMFLOW_CUSOLVER_CHECK(cusolver().sgeqrf_buffer_size(st.solver, m, l, st.z.data(), m, &w));
      best = std::max(best, w);
      IMFLOW_CUSOLVER_CHECK(cusolver().sorgqr_buffer_size(st.solver, n, l, l, st.y.data(), n, st.tau.data(), &w));
      best = std::max(best, w);
      IMFLOW_CUSOLVER_CHECK(cusolver().sorgqr_buffer_size(st.solver, m, l, l, st.z.data(), m, st.tau.data(), &w));
      best = std::max(best, w);
      IMFLOW_CUSOLVER_CHECK(cusolver().sgesvdj_buffer_size(st.solver, CUSOLVER_EIG_MODE_VECTOR, 1, m, l, st.z.data(), m,
                                                         st.s.data(), st.ua.data(), m, st.small.data(), l, &w,
                                                         st.params));
      best = std::max(best, w);
      st.lwork = best;
      st.work.reserve(static_cast<size_t>(best));
      st.cached_solver = solver_id, st.cached_m = m, st.cached_n = n, st.cached_l = l;
    }
    if (st.omega_m != m || st.omega_l != l) {
      st.omega.reserve(static_cast<size_t>(m) * l);
      const long long count = static_cast<long long>(m) * l;
      gaussian_kernel<<<static_cast<unsigned>((count + 255) / 256), 256, 0, gpu.stream>>>(st.omega.data(), count, 12345u);
      IMFLOW_CUDA_CHECK_LAUNCH();
      st.omega_m = m, st.omega_l = l;
    }
    const float* M = gpu.image.data();
    float *Y = st.y.data(), *Z = st.z.data();
    IMFLOW_CUBLAS_CHECK(cublas().sgemm(st.blas, CUBLAS_OP_N, CUBLAS_OP_N, n, l, m, &one, M, n, st.omega.data(), m, &zero, Y, n));
    for (int it = 0; it < o.power_iterations; ++it) {
      orthonormalize(st, Y, n, l);
      IMFLOW_CUBLAS_CHECK(cublas().sgemm(st.blas, CUBLAS_OP_T, CUBLAS_OP_N, m, l, n, &one, M, n, Y, n, &zero, Z, m));
      orthonormalize(st, Z, m, l);
      IMFLOW_CUBLAS_CHECK(cublas().sgemm(st.blas, CUBLAS_OP_N, CUBLAS_OP_N, n, l, m, &one, M, n, Z, m, &zero, Y, n));
    }
    orthonormalize(st, Y, n, l);
    IMFLOW_CUBLAS_CHECK(cublas().sgemm(st.blas, CUBLAS_OP_T, CUBLAS_OP_N, m, l, n, &one, M, n, Y, n, &zero, Z, m));
    IMFLOW_CUSOLVER_CHECK(cusolver().sgesvdj(st.solver, CUSOLVER_EIG_MODE_VECTOR, 1, m, l, Z, m, st.s.data(),
                                            st.ua.data(), m, st.small.data(), l, st.work.data(), st.lwork,
                                            st.ints.data(), st.params));
    IMFLOW_CUBLAS_CHECK(cublas().sgemm(st.blas, CUBLAS_OP_N, CUBLAS_OP_N, n, l, l, &one, Y, n, st.small.data(), l, &zero,
                                    st.va.data(), n));
    enqueue_choose_k(st.s.data(), l, static_cast<int>(rank), 0.0, st.ints.data(), gpu.results.data(), true, gpu.stream);
    run_reconstruct(gpu, st, o.kernel, st.ua.data(), m, st.s.data(), st.va.data(), n, static_cast<int>(rank));
    measure(gpu, st, st.s.data(), l, r);
    st.last = {st.ua.data(), st.s.data(), st.va.data(), m, n, l};
    finish(gpu);
    return;
  }
  const int k_rank = rank > 0 ? static_cast<int>(rank) : -1;
  enqueue_choose_k(st.s.data(), r, k_rank, o.energy, st.ints.data(), gpu.results.data(), true, gpu.stream);
  run_reconstruct(gpu, st, o.kernel, st.ua.data(), m, st.s.data(), st.va.data(), n, k_rank > 0 ? k_rank : r);
  measure(gpu, st, st.s.data(), r, r);
  st.last = {st.ua.data(), st.s.data(), st.va.data(), m, n, r};
  finish(gpu);
}

void reconstruct_from_factors(GpuContext& gpu, const float* factors, int64_t k64, ReconstructKernel kernel) {
  DeviceGuard guard(gpu.device);
  const int m = static_cast<int>(gpu.height), n = static_cast<int>(gpu.width), r = std::min(m, n);
  const int k = static_cast<int>(k64);
  SvdState& st = state_of(gpu);
  const size_t count = static_cast<size_t>(m) * k + r + static_cast<size_t>(n) * k;
  // The slot is used by one item at a time and its stream is idle when an item is enqueued, so
  // the pinned staging buffer is free to overwrite here.
  st.staging.reserve(count);
  st.factors.reserve(count);
  std::memcpy(st.staging.data(), factors, count * sizeof(float));
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(st.factors.data(), st.staging.data(), count * sizeof(float), cudaMemcpyHostToDevice,
                                    gpu.stream));
  const float* u = st.factors.data();
  const float* s = u + static_cast<size_t>(m) * k;
  const float* v = s + r;
  set_k<<<1, 1, 0, gpu.stream>>>(st.ints.data(), k);
  IMFLOW_CUDA_CHECK_LAUNCH();
  run_reconstruct(gpu, st, kernel, u, m, s, v, n, k);
  measure(gpu, st, s, r, r);
  st.last = {u, s, v, m, n, k};
  finish(gpu);
}

void copy_svd_metrics(const DeviceResults& r, WorkItem& item) {
  if (r.svd_status == kSvdNonFinite) {
    throw std::runtime_error(kernels::nonfinite_pixels_reason(static_cast<int64_t>(r.svd_metrics[kRank])));
  }
  if (r.svd_status != 0) {
    throw std::runtime_error("the GPU SVD did not converge (solver info " + std::to_string(r.svd_status) + ")");
  }
  for (int i = 0; i < kSvdMetrics; ++i) item.metrics[kSvdMetricNames[i]] = r.svd_metrics[i];
}

void collect_svd_metrics(GpuContext& gpu, WorkItem& item) { copy_svd_metrics(*gpu.results_host.data(), item); }

SvdFactorsView last_factors(const GpuContext& gpu) { return gpu.svd ? gpu.svd->last : SvdFactorsView{}; }

void set_reconstruct_config(GpuContext& gpu, const ReconstructConfig& config) {
  DeviceGuard guard(gpu.device);
  state_of(gpu).config = config;
}

}  // namespace imflow::cuda
