// Step `svd_reconstruct`: thin SVD of the slice, rank-k reconstruction (rank: k or energy:
// fraction), quality metrics into item.metrics; the reconstruction replaces item.pixels.
// CPU: LAPACK sgesdd + the blocked reconstruction. CUDA (cuda/svd.hpp): solver gpu = cuSOLVER
// SVD (svd_solver: gesvdj | gesvd | randomized) + a reconstruction kernel (reconstruct_kernel:
// naive | tiled | register | cublas); solver cpu + reconstruct gpu = the hybrid (the CPU SVD in
// the reader's host phase, Step::prepare_host, the reconstruction and metrics on the GPU).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <string>

#include "imflow/errors.hpp"
#include "imflow/kernels/reconstruct.hpp"
#include "imflow/kernels/svd.hpp"
#include "imflow/params.hpp"
#include "steps.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/svd.hpp"
#endif

namespace imflow {

namespace {
// solver / reconstruct: cpu | gpu | auto. On a CPU build gpu is refused at pipeline load.
std::string device_param(ParamReader& params, const std::string& key) {
  const std::string value = params.choice(key, "auto", {"cpu", "gpu", "auto"});
#ifndef IMFLOW_HAVE_CUDA
  if (value == "gpu") {
    params.fail(YAML::Node(), key, "gpu was requested but this imflow was built without CUDA (IMFLOW_CUDA=OFF); use cpu or auto");
  }
#endif
  return value;
}

// The reconstruction kernel `auto` picks: the fastest measured on the H100 for 217x181 rank 50
// (docs/performance.md, "MRI SVD on the GPU").
constexpr const char* kFastestKernel = "tiled";
// The solver `auto` picks: the fastest exact one measured (randomized misses the accuracy bar).
constexpr const char* kDefaultSolver = "gesvdj";

class SvdReconstructStep final : public Step {
 public:
  explicit SvdReconstructStep(ParamReader& params) {
    const bool has_rank = params.has("rank"), has_energy = params.has("energy");
    if (has_rank == has_energy) params.fail(YAML::Node(), "rank", "give exactly one of rank: k or energy: fraction");
    if (has_rank) rank_ = params.integer("rank", 1, 1, int64_t{1} << 30);
    if (has_energy) {
      energy_ = params.number("energy", 0.99, 0.0, 1.0);
      if (energy_ <= 0.0) params.fail(YAML::Node(), "energy", "must be > 0 and <= 1");
    }
    clip_rank_ = params.boolean("clip_rank", false);
    solver_ = device_param(params, "solver");
    reconstruct_ = device_param(params, "reconstruct");
    if (solver_ == "gpu" && reconstruct_ == "cpu") {
      params.fail(YAML::Node(), "reconstruct", "reconstruct: cpu needs solver: cpu (the SVD factors stay on the GPU)");
    }
    svd_solver_ = params.choice("svd_solver", "auto", {"gesvdj", "gesvd", "randomized", "auto"});
    if (svd_solver_ == "auto") svd_solver_ = kDefaultSolver;
    kernel_ = params.choice("reconstruct_kernel", "auto", {"naive", "tiled", "register", "cublas", "auto"});
    if (kernel_ == "auto") kernel_ = kFastestKernel;
    oversampling_ = static_cast<int>(params.integer("oversampling", 10, 0, 1000));
    power_iterations_ = static_cast<int>(params.integer("power_iterations", 2, 0, 100));
    if (svd_solver_ == "randomized" && has_energy) {
      params.fail(YAML::Node(), "svd_solver", "randomized needs rank: k (the energy rule needs every singular value)");
    }
    kernels::use_single_threaded_blas();
  }

  void run_cpu(WorkItem& item) const override {
    int64_t k = 0;
    const kernels::SvdFactors f = host_svd(item, k);
    float* reconstruction = item.scratch.data();  // the A copy that sgesdd destroyed, m x n
    kernels::reconstruct_blocked(f, k, reconstruction, f.n);
    const ConstImageView a = item.pixels.view();
    const auto metrics = kernels::reconstruction_metrics(a, {reconstruction, f.n, f.m}, f.s, f.r, k);
    item.metrics["rank"] = static_cast<double>(k);
    item.metrics["singular_values"] = static_cast<double>(f.r);
    item.metrics["sigma_1"] = f.r > 0 ? f.s[0] : 0.0;
    item.metrics["sigma_k"] = k > 0 ? f.s[k - 1] : 0.0;
    item.metrics["rel_frobenius_error"] = metrics.rel_frobenius_error;
    item.metrics["psnr_db"] = metrics.psnr_db;
    item.metrics["energy_kept"] = metrics.energy_kept;
    item.metrics["compression_ratio"] = metrics.compression_ratio;
    std::copy(reconstruction, reconstruction + f.m * f.n, item.pixels.data());
  }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  // solver cpu, and auto (measured faster on an H100 with 16 cores: LAPACK sgesdd on the host
  // threads ~1,500 slices/s against ~220 for cuSOLVER gesvdj per slice, docs/performance.md):
  // the SVD (and with reconstruct cpu, everything) runs in the host phase.
  bool host_svd_mode() const { return solver_ != "gpu"; }
  bool needs_host_phase() const override { return host_svd_mode(); }

  void prepare_host(WorkItem& item) const override {
    if (reconstruct_ == "cpu") {
      run_cpu(item);
      return;
    }
    int64_t k = 0;
    const kernels::SvdFactors f = host_svd(item, k);
    // [U_k column-major m x k | s (r) | V_k column-major n x k] for cuda::reconstruct_from_factors.
    const int64_t m = f.m, n = f.n, r = f.r;
    item.host_factors.resize(static_cast<size_t>(m * k + r + n * k));
    float* u = item.host_factors.data();
    float* s = u + m * k;
    float* v = s + r;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t l = 0; l < k; ++l) u[i + l * m] = f.u[i * f.ldu + l];
    std::copy(f.s, f.s + r, s);
    for (int64_t l = 0; l < k; ++l) std::copy(f.vt + l * f.ldvt, f.vt + l * f.ldvt + n, v + l * n);
    item.host_factors_k = k;
  }

  void run_cuda(WorkItem& item, GpuContext& gpu) const override {
    std::call_once(logged_, [&] {
      if (host_svd_mode()) {
        spdlog::info("svd_reconstruct: SVD on the CPU (LAPACK sgesdd), reconstruction on the {} ({} kernel){}",
                     reconstruct_ == "cpu" ? "CPU" : "GPU", reconstruct_ == "cpu" ? "blocked" : kernel_,
                     solver_ == "auto" ? "; solver auto chose the CPU SVD (measured faster than cuSOLVER per slice, "
                                         "docs/performance.md)"
                                       : "");
      } else {
        spdlog::info("svd_reconstruct: SVD on the GPU (cuSOLVER {}), reconstruction kernel {}", svd_solver_, kernel_);
      }
    });
    if (host_svd_mode()) {
      if (reconstruct_ == "cpu") return;  // done in prepare_host
      if (item.host_factors_k < 0) throw std::logic_error("svd_reconstruct: the host phase did not run");
      cuda::reconstruct_from_factors(gpu, item.host_factors.data(), item.host_factors_k,
                                     cuda::parse_reconstruct_kernel(kernel_));
      return;
    }
    cuda::SvdOptions options;
    options.solver = cuda::parse_svd_solver(svd_solver_);
    options.kernel = cuda::parse_reconstruct_kernel(kernel_);
    options.rank = rank_;
    options.energy = energy_;
    options.clip_rank = clip_rank_;
    options.oversampling = oversampling_;
    options.power_iterations = power_iterations_;
    cuda::svd_reconstruct(gpu, options);
  }
#endif

 private:
  // The CPU SVD of item.pixels into item.scratch, and the rank k (checked as documented).
  kernels::SvdFactors host_svd(WorkItem& item, int64_t& k) const {
    const ConstImageView a = item.pixels.view();
    const int64_t bad = std::count_if(a.data, a.data + a.size(), [](float x) { return !std::isfinite(x); });
    if (bad > 0) throw std::runtime_error(std::to_string(bad) + " NaN/Inf pixels: the SVD needs finite values");
    const kernels::SvdFactors f = kernels::svd_thin(a, item.scratch);
    k = rank_ > 0 ? rank_ : kernels::rank_for_energy(f.s, f.r, energy_);
    if (k > f.r) {
      if (!clip_rank_) {
        throw std::runtime_error("rank " + std::to_string(k) + " is larger than min(m, n) = " + std::to_string(f.r) +
                                 " of this " + std::to_string(f.n) + "x" + std::to_string(f.m) +
                                 " slice (set clip_rank: true to clip)");
      }
      k = f.r;
    }
    return f;
  }

  int64_t rank_ = 0;
  double energy_ = 0.0;
  bool clip_rank_ = false;
  std::string solver_, reconstruct_, svd_solver_, kernel_;
  int oversampling_ = 10, power_iterations_ = 2;
  mutable std::once_flag logged_;
};
}  // namespace

std::unique_ptr<Step> make_svd_reconstruct_step(ParamReader& params) {
  return std::make_unique<SvdReconstructStep>(params);
}

}  // namespace imflow
