// Step `svd_reconstruct`: thin SVD of the slice, rank-k reconstruction (rank: k or energy:
// fraction), quality metrics into item.metrics; the reconstruction replaces item.pixels.
// CPU: LAPACK sgesdd + the blocked reconstruction. CUDA (cuda/svd.hpp): solver gpu = cuSOLVER
// SVD per slice (svd_solver: gesvdj | gesvd | randomized) or batched (gesvda | jacobi, many
// slices per launch through the engine's `batch`, cuda/svd_batched.hpp) + a reconstruction
// kernel (reconstruct_kernel: naive | tiled | register | cublas); solver cpu + reconstruct gpu =
// the hybrid (the CPU SVD in the reader's host phase, Step::prepare_host, the reconstruction and
// metrics on the GPU); solver auto = whichever of the two a warm-up on the first slice measures
// faster (choose_on_device).
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "imflow/errors.hpp"
#include "imflow/kernels/reconstruct.hpp"
#include "imflow/kernels/svd.hpp"
#include "imflow/params.hpp"
#include "imflow/step.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/gpu_batch.hpp"
#include "cuda/svd.hpp"
#include "cuda/svd_batched.hpp"
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
// (docs/mri.md, "On the GPU: solvers, batches, `solver: auto`").
constexpr const char* kFastestKernel = "tiled";
// The solver `auto` picks: per slice the fastest exact one measured (randomized misses the
// accuracy bar); in batches gesvda, the fastest batched solver on the H100 (docs/mri.md), whose
// non-converged slices (nearly empty ones) are redone by the Jacobi kernel in the same stream.
constexpr const char* kDefaultSolver = "gesvdj";
constexpr const char* kDefaultBatchedSolver = "gesvda";

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
    svd_solver_ = params.choice("svd_solver", "auto", {"gesvdj", "gesvd", "randomized", "gesvda", "jacobi", "auto"});
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
  // solver auto before (or without) a warm-up is the hybrid; choose_on_device may pick the GPU.
  bool host_svd_mode() const { return solver_ == "cpu" || (solver_ == "auto" && auto_choice_.load() != kChoseGpu); }
  bool needs_host_phase() const override { return host_svd_mode(); }
  // The per-slice solver (svd_solver auto: gesvdj) and the batched one (auto: gesvda).
  std::string per_item_solver() const { return svd_solver_ == "auto" ? kDefaultSolver : svd_solver_; }
  std::string batched_solver() const { return svd_solver_ == "auto" ? kDefaultBatchedSolver : svd_solver_; }
  bool has_cuda_batch() const override {
    return !host_svd_mode() && (svd_solver_ == "auto" || svd_solver_ == "gesvda" || svd_solver_ == "jacobi");
  }

  cuda::SvdOptions gpu_options(const std::string& solver) const {
    cuda::SvdOptions options;
    options.solver = cuda::parse_svd_solver(solver);
    options.kernel = cuda::parse_reconstruct_kernel(kernel_);
    options.rank = rank_;
    options.energy = energy_;
    options.clip_rank = clip_rank_;
    options.oversampling = oversampling_;
    options.power_iterations = power_iterations_;
    return options;
  }

  void run_cuda_batch(WorkItem* const*, int count, GpuBatch& batch) const override {
    std::call_once(logged_, [&] {
      spdlog::info("svd_reconstruct: SVD on the GPU in batches of up to {} slices (cuSOLVER/imflow {}), "
                   "reconstruction kernel {}",
                   count, batched_solver(), kernel_);
    });
    cuda::SvdBatchJob job;
    job.images = batch.images.data();
    job.out = batch.spare.data();
    job.m = static_cast<int>(batch.height);
    job.n = static_cast<int>(batch.width);
    job.count = count;
    job.results = batch.results.data();
    cuda::svd_reconstruct_batched(batch.svd, batch.stream, batch.max_shared_optin, gpu_options(batched_solver()), job);
    swap(batch.images, batch.spare);
    batch.image_modified = batch.has_svd_metrics = true;
  }

  bool chooses_on_device() const override { return solver_ == "auto" && reconstruct_ != "cpu"; }
  bool uses_gpu_linear_algebra() const override { return reconstruct_ != "cpu"; }
  nlohmann::json choose_on_device(WorkItem& sample, GpuContext& gpu, std::unique_ptr<GpuBatch>& batch_state,
                                  int host_threads, int batch) const override;

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
                     solver_ == "auto" ? "; solver auto chose the CPU SVD" : "");
      } else {
        spdlog::info("svd_reconstruct: SVD on the GPU per slice ({}), reconstruction kernel {}", per_item_solver(),
                     kernel_);
      }
    });
    if (host_svd_mode()) {
      if (reconstruct_ == "cpu") return;  // done in prepare_host
      if (item.host_factors_k < 0) throw std::logic_error("svd_reconstruct: the host phase did not run");
      cuda::reconstruct_from_factors(gpu, item.host_factors.data(), item.host_factors_k,
                                     cuda::parse_reconstruct_kernel(kernel_));
      return;
    }
    cuda::svd_reconstruct(gpu, gpu_options(per_item_solver()));
  }
#endif

 private:
  // The CPU SVD of item.pixels into item.scratch, and the rank k (checked as documented).
  kernels::SvdFactors host_svd(WorkItem& item, int64_t& k) const {
    const ConstImageView a = item.pixels.view();
    const int64_t bad = std::count_if(a.data, a.data + a.size(), [](float x) { return !std::isfinite(x); });
    if (bad > 0) throw std::runtime_error(kernels::nonfinite_pixels_reason(bad));
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
  static constexpr int kChoseGpu = 1, kChoseHybrid = 0;
  mutable std::atomic<int> auto_choice_{-1};  // solver auto: set once by choose_on_device
};
#ifdef IMFLOW_HAVE_CUDA
// solver auto: the hybrid's host phase (LAPACK sgesdd + packing the factors, one thread, best of
// 2 after a warm-up) against the GPU way the engine would take (a batch of `batch` copies of the
// sample through the batched solver, or one slice per launch; after a warm-up, CUDA events),
// both at once: the host's on a thread of its own, with its own copy of the sample. The hybrid's
// rate is host_threads slices in parallel; the faster rate wins. A batched trial runs in the
// slot's batch buffers, which the slot then keeps.
nlohmann::json SvdReconstructStep::choose_on_device(WorkItem& sample, GpuContext& gpu,
                                                    std::unique_ptr<GpuBatch>& batch_state, int host_threads,
                                                    int batch) const {
  using clock = std::chrono::steady_clock;
  WorkItem host_sample;
  host_sample.pixels.resize(sample.pixels.width(), sample.pixels.height());
  std::copy_n(sample.pixels.data(), sample.pixels.width() * sample.pixels.height(), host_sample.pixels.data());
  std::future<double> host_timing = std::async(std::launch::async, [&] {
    double best = 1e300;
    for (int rep = 0; rep < 3; ++rep) {
      const auto start = clock::now();
      prepare_host(host_sample);
      const double seconds = std::chrono::duration<double>(clock::now() - start).count();
      if (rep > 0) best = std::min(best, seconds);
    }
    return best;
  });

  const bool batched = batch > 1 && (svd_solver_ == "auto" || svd_solver_ == "gesvda" || svd_solver_ == "jacobi");
  const std::string gpu_solver = batched ? batched_solver() : per_item_solver();
  cuda::DeviceGuard guard(gpu.device);
  cuda::Event start(true), stop(true);
  float best_ms = 1e30f;
  if (batched) {
    if (!batch_state) batch_state = std::make_unique<GpuBatch>(gpu.device, gpu.stream);
    GpuBatch& trial = *batch_state;
    const std::vector<WorkItem*> copies(static_cast<size_t>(batch), &sample);
    cuda::SvdBatchJob job;
    for (int rep = 0; rep < 2; ++rep) {
      cuda::enqueue_batch_upload(trial, copies.data(), batch);
      job.images = trial.images.data();
      job.out = trial.spare.data();
      job.m = static_cast<int>(trial.height);
      job.n = static_cast<int>(trial.width);
      job.count = batch;
      job.results = trial.results.data();
      start.record(gpu.stream);
      cuda::svd_reconstruct_batched(trial.svd, gpu.stream, trial.max_shared_optin, gpu_options(gpu_solver), job);
      stop.record(gpu.stream);
      IMFLOW_CUDA_CHECK(cudaStreamSynchronize(gpu.stream));
      if (rep > 0) best_ms = std::min(best_ms, cuda::Event::elapsed_ms(start, stop));
    }
  } else {
    for (int rep = 0; rep < 2; ++rep) {
      cuda::enqueue_upload(gpu, sample);
      start.record(gpu.stream);
      cuda::svd_reconstruct(gpu, gpu_options(gpu_solver));
      stop.record(gpu.stream);
      IMFLOW_CUDA_CHECK(cudaStreamSynchronize(gpu.stream));
      if (rep > 0) best_ms = std::min(best_ms, cuda::Event::elapsed_ms(start, stop));
    }
  }
  const double cpu_seconds = host_timing.get();
  const double cpu_rate = host_threads / cpu_seconds;
  const int slices = batched ? batch : 1;
  const double gpu_rate = slices / (best_ms * 1e-3);
  const bool choose_gpu = gpu_rate > cpu_rate;
  auto_choice_ = choose_gpu ? kChoseGpu : kChoseHybrid;
  spdlog::info("svd_reconstruct solver auto: GPU {} {} {:.0f} slices/s ({} slice{} in {:.3f} ms) vs CPU LAPACK {:.0f} "
               "slices/s ({} threads, {:.3f} ms a slice) on a {}x{} slice: chose the {}",
               batched ? "batched" : "per-slice", gpu_solver, gpu_rate, slices, slices > 1 ? "s" : "", best_ms, cpu_rate,
               host_threads, cpu_seconds * 1e3, sample.pixels.width(), sample.pixels.height(),
               choose_gpu ? "GPU" : "CPU SVD (hybrid)");
  return {{"step", "svd_reconstruct"},
          {"choice", choose_gpu ? "gpu" : "hybrid"},
          {"gpu_solver", gpu_solver},
          {"gpu_batch", slices},
          {"gpu_slices_per_second", gpu_rate},
          {"gpu_ms_per_launch", best_ms},
          {"cpu_slices_per_second", cpu_rate},
          {"cpu_ms_per_slice", cpu_seconds * 1e3},
          {"host_threads", host_threads},
          {"width", sample.pixels.width()},
          {"height", sample.pixels.height()}};
}
#endif

}  // namespace

std::unique_ptr<Step> make_svd_reconstruct_step(ParamReader& params) {
  return std::make_unique<SvdReconstructStep>(params);
}

}  // namespace imflow
