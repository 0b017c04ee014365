// GPU MRI path, per slice: normalize, the reconstruction kernels, the cuSOLVER SVD (gesvdj,
// gesvd, randomized) and the hybrid, against the CPU path and against matrices of known
// spectrum; real slices (datasets/samples/mri, and datasets/data/mri/slices when fetched); the
// pipeline end to end on the device (batched solvers: test_gpu_svd_batched.cpp). Error bars:
// singular values 1e-4 relative, relative Frobenius error within 1e-4 absolute,
// reconstruction kernels 1e-5 relative.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "cuda/linear_algebra.hpp"
#include "cuda/normalize.hpp"
#include "cuda/reconstruct.hpp"
#include "cuda/svd.hpp"
#include "gpu_test_helpers.hpp"
#include "svd_test_helpers.hpp"
#include "imflow/engine.hpp"
#include "imflow/io/png.hpp"
#include "imflow/kernels/normalize.hpp"
#include "imflow/kernels/reconstruct.hpp"
#include "imflow/kernels/svd.hpp"
#include "imflow/pipeline.hpp"

using gpu_test::Slot;
using imflow::WorkItem;
using namespace svd_test;
namespace icuda = imflow::cuda;
namespace fs = std::filesystem;

TEST_CASE("GPU normalize matches the CPU (minmax, zscore, NaN, constant, no finite pixel, nonfinite: zero)",
          "[gpu][mri]") {
  Slot slot;
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(120.0f, 40.0f);
  for (const bool zero : {false, true}) {
    for (const bool zscore : {false, true}) {
      for (int variant = 0; variant < 4; ++variant) {
        INFO("zero " << zero << " zscore " << zscore << " variant " << variant);
        const int64_t w = variant == 3 ? 1000 : 181, h = variant == 3 ? 700 : 217;
        std::vector<float> px(static_cast<size_t>(w * h));
        for (auto& x : px) x = noise(rng);
        if (variant == 1) std::fill(px.begin(), px.end(), 42.0f);
        if (variant == 2) std::fill(px.begin(), px.end(), NAN);
        if (variant == 0 || variant == 3) {
          px[5] = NAN;
          px[77] = INFINITY;
          px[99] = -INFINITY;
        }
        WorkItem cpu;
        set_pixels(cpu, w, h, px);
        const auto method =
            zscore ? imflow::kernels::NormalizeMethod::zscore : imflow::kernels::NormalizeMethod::minmax;
        const imflow::Normalization ref = imflow::kernels::normalize(cpu.pixels.view(), method);
        const int64_t zeroed = zero ? imflow::kernels::zero_nonfinite(cpu.pixels.view()) : 0;
        CHECK(zeroed == (!zero || variant == 1 ? 0 : variant == 2 ? w * h : 3));
        WorkItem gpu;
        set_pixels(gpu, w, h, px);
        run_on_gpu(slot, gpu, [&](imflow::GpuContext& g) { icuda::normalize(g, zscore, zero); });
        REQUIRE(gpu.normalization.has_value());
        CHECK(gpu.normalization->offset == Approx(ref.offset).epsilon(1e-12).margin(1e-12));
        CHECK(gpu.normalization->scale == Approx(ref.scale).epsilon(1e-12).margin(1e-12));
        CHECK(gpu.metrics.count("zeroed_pixels") == (zeroed > 0 ? 1u : 0u));
        if (zeroed > 0) CHECK(gpu.metrics.at("zeroed_pixels") == static_cast<double>(zeroed));
        size_t mismatches = 0;
        for (size_t i = 0; i < px.size(); ++i) {
          const float a = gpu.pixels.data()[i], b = cpu.pixels.data()[i];
          if (std::isnan(b) ? !std::isnan(a) : (std::isinf(b) ? a != b : std::abs(a - b) > 1e-6f * (1.0f + std::abs(b))))
            ++mismatches;
        }
        CHECK(mismatches == 0);
      }
    }
  }
}

TEST_CASE("GPU reconstruction kernels match the CPU reconstruction", "[gpu][mri][reconstruct]") {
  Slot slot;
  icuda::DeviceBuffer<float> du, ds, dv, dout, scratch;
  icuda::DeviceBuffer<int> dk(1);
  cublasHandle_t blas = nullptr;
  IMFLOW_CUBLAS_CHECK(imflow::cuda::cublas().create(&blas));
  IMFLOW_CUBLAS_CHECK(imflow::cuda::cublas().set_stream(blas, slot.stream.get()));
  std::mt19937 rng(3);
  std::normal_distribution<float> g;
  struct Shape { int m, n, k; };
  for (const Shape sh : {Shape{217, 181, 50}, Shape{256, 256, 64}, Shape{181, 217, 1}, Shape{33, 65, 0},
                         Shape{1, 7, 1}, Shape{100, 80, 80}}) {
    const int r = std::min(sh.m, sh.n);
    std::vector<float> u(static_cast<size_t>(sh.m) * r), s(r), v(static_cast<size_t>(sh.n) * r);
    for (auto& x : u) x = g(rng);
    for (auto& x : v) x = g(rng);
    for (int l = 0; l < r; ++l) s[l] = 100.0f / (1 + l);
    // CPU reference: row-major U (m x r), Vt (r x n).
    std::vector<float> ur(u.size()), vt(v.size()), ref(static_cast<size_t>(sh.m) * sh.n);
    for (int i = 0; i < sh.m; ++i)
      for (int l = 0; l < r; ++l) ur[i * r + l] = u[i + l * sh.m];
    for (int l = 0; l < r; ++l)
      for (int j = 0; j < sh.n; ++j) vt[l * sh.n + j] = v[j + l * sh.n];
    imflow::kernels::SvdFactors f{ur.data(), r, s.data(), vt.data(), sh.n, sh.m, sh.n, r};
    imflow::kernels::reconstruct_naive(f, sh.k, ref.data(), sh.n);
    du.reserve(u.size());
    dv.reserve(v.size());
    ds.reserve(s.size());
    dout.reserve(ref.size());
    scratch.reserve(static_cast<size_t>(sh.m) * std::max(sh.k, 1));
    IMFLOW_CUDA_CHECK(cudaMemcpy(du.data(), u.data(), u.size() * 4, cudaMemcpyHostToDevice));
    IMFLOW_CUDA_CHECK(cudaMemcpy(dv.data(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    IMFLOW_CUDA_CHECK(cudaMemcpy(ds.data(), s.data(), s.size() * 4, cudaMemcpyHostToDevice));
    IMFLOW_CUDA_CHECK(cudaMemcpy(dk.data(), &sh.k, 4, cudaMemcpyHostToDevice));
    icuda::ReconstructArgs args{du.data(), sh.m, ds.data(), dv.data(), sh.n, sh.m, sh.n, dk.data(), sh.k, dout.data(), sh.n};
    std::vector<std::pair<icuda::ReconstructKernel, icuda::ReconstructConfig>> runs;
    for (auto b : {std::pair{32, 8}, std::pair{16, 16}, std::pair{64, 4}, std::pair{128, 1}})
      runs.push_back({icuda::ReconstructKernel::naive, {b.first, b.second, 0, -1}});
    for (int t : {8, 16, 32}) runs.push_back({icuda::ReconstructKernel::tiled, {0, 0, t, -1}});
    for (int v2 = 0; v2 < icuda::register_variants(); ++v2) runs.push_back({icuda::ReconstructKernel::register_blocked, {0, 0, 0, v2}});
    runs.push_back({icuda::ReconstructKernel::cublas, {}});
    for (const auto& [kernel, config] : runs) {
      IMFLOW_CUDA_CHECK(cudaMemset(dout.data(), 0xff, ref.size() * 4));  // NaN: every output must be written
      icuda::reconstruct(kernel, args, slot.stream.get(), blas, scratch.data(), config);
      const auto out = download(dout.data(), ref.size(), slot.stream.get());
      INFO(icuda::reconstruct_kernel_name(kernel) << " " << sh.m << "x" << sh.n << " k " << sh.k << " cfg "
                                                   << config.bx << "x" << config.by << " t" << config.tile << " v"
                                                   << config.variant);
      bool finite = std::all_of(out.begin(), out.end(), [](float x) { return std::isfinite(x); });
      CHECK(finite);
      CHECK(rel_diff(out.data(), ref.data(), ref.size()) < 1e-5);
    }
  }
  imflow::cuda::cublas().destroy(blas);
}

TEST_CASE("GPU SVD on matrices of known spectrum: square, tall, wide, rank-deficient, zero", "[gpu][mri][svd]") {
  Slot slot;
  struct Case { int64_t m, n, k, rank; double decay; };
  for (const Case c : {Case{64, 64, 20, 64, 0.9}, Case{217, 181, 50, 181, 0.97}, Case{181, 217, 50, 181, 0.97},
                       Case{256, 256, 50, 256, 0.98}, Case{100, 80, 20, 10, 0.8}, Case{30, 200, 5, 30, 0.7}}) {
    std::vector<double> sigma(static_cast<size_t>(std::min(c.m, c.n)), 0.0);
    for (int64_t l = 0; l < c.rank; ++l) sigma[l] = 50.0 * std::pow(c.decay, static_cast<double>(l));
    const auto a = known_spectrum(c.m, c.n, std::vector<double>(sigma.begin(), sigma.begin() + c.rank), 11 + c.m);
    double tail = 0.0, total = 0.0;
    for (size_t l = 0; l < sigma.size(); ++l) {
      total += sigma[l] * sigma[l];
      if (static_cast<int64_t>(l) >= c.k) tail += sigma[l] * sigma[l];
    }
    const double err_exact = std::sqrt(tail / total);
    const CpuSvd cpu = cpu_svd(a, c.m, c.n, c.k);
    CHECK(std::abs(cpu.rel_error - err_exact) < 1e-4);
    for (auto solver : {icuda::SvdSolver::gesvdj, icuda::SvdSolver::gesvd, icuda::SvdSolver::randomized}) {
      INFO(icuda::svd_solver_name(solver) << " " << c.m << "x" << c.n << " k " << c.k << " rank " << c.rank);
      const SvdCheck r = check_gpu_svd(slot, a, c.m, c.n, c.k, solver, sigma, err_exact, cpu.recon);
      if (solver == icuda::SvdSolver::randomized && c.rank > c.k + 10) {
        // Rank above the sketch: not exact; reported, not required (randomized is kept out of auto).
        WARN("randomized " << c.m << "x" << c.n << ": sv rel " << r.max_sv_rel << ", error diff " << r.err_diff);
        continue;
      }
      CHECK(r.max_sv_rel < 1e-4);
      CHECK(r.err_diff < 1e-4);
      CHECK(r.pixel_rel < 1e-4);
    }
  }
  // All zero: s = 0, reconstruction 0, error 0, energy 1, PSNR +inf (MSE 0).
  for (auto solver : {icuda::SvdSolver::gesvdj, icuda::SvdSolver::gesvd, icuda::SvdSolver::randomized}) {
    WorkItem item;
    set_pixels(item, 181, 217, std::vector<float>(181 * 217, 0.0f));
    icuda::SvdOptions options;
    options.solver = solver;
    options.rank = 50;
    run_on_gpu(slot, item, [&](imflow::GpuContext& gpu) { icuda::svd_reconstruct(gpu, options); });
    CHECK(item.metrics["rel_frobenius_error"] == 0.0);
    CHECK(item.metrics["energy_kept"] == 1.0);
    CHECK(std::isinf(item.metrics["psnr_db"]));
    CHECK(std::all_of(item.pixels.data(), item.pixels.data() + 181 * 217, [](float x) { return x == 0.0f; }));
  }
}

TEST_CASE("GPU SVD energy rule, clip_rank, NaN pixels, hybrid factors", "[gpu][mri][svd]") {
  Slot slot;
  std::vector<double> sigma(60);
  for (size_t l = 0; l < sigma.size(); ++l) sigma[l] = 10.0 * std::pow(0.8, static_cast<double>(l));
  const auto a = known_spectrum(90, 60, sigma, 5);
  std::vector<float> work;
  const auto f = imflow::kernels::svd_thin({a.data(), 60, 90}, work);
  const int64_t k_ref = imflow::kernels::rank_for_energy(f.s, f.r, 0.95);
  WorkItem item;
  set_pixels(item, 60, 90, a);
  icuda::SvdOptions energy;
  energy.energy = 0.95;
  run_on_gpu(slot, item, [&](imflow::GpuContext& gpu) { icuda::svd_reconstruct(gpu, energy); });
  CHECK(item.metrics["rank"] == k_ref);
  CHECK(item.metrics["energy_kept"] >= 0.95);

  set_pixels(item, 60, 90, a);
  icuda::SvdOptions big;
  big.rank = 100;
  CHECK_THROWS_WITH(icuda::svd_reconstruct(slot.gpu, big), Catch::Contains("clip_rank"));
  big.clip_rank = true;
  run_on_gpu(slot, item, [&](imflow::GpuContext& gpu) { icuda::svd_reconstruct(gpu, big); });
  CHECK(item.metrics["rank"] == 60);
  CHECK(item.metrics["rel_frobenius_error"] < 1e-4);  // full rank: float32 round-off only

  auto bad = a;
  bad[10] = NAN;
  set_pixels(item, 60, 90, bad);
  icuda::SvdOptions rank5;
  rank5.rank = 5;
  CHECK_THROWS_WITH(run_on_gpu(slot, item, [&](imflow::GpuContext& gpu) { icuda::svd_reconstruct(gpu, rank5); }),
                    Catch::Contains("NaN/Inf"));

  // Hybrid: the CPU factors reconstructed on the device equal the CPU path.
  const int64_t m = 90, n = 60, r = 60, k = 7;
  std::vector<float> factors(static_cast<size_t>(m * k + r + n * k));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t l = 0; l < k; ++l) factors[i + l * m] = f.u[i * f.ldu + l];
  std::copy(f.s, f.s + r, factors.begin() + m * k);
  for (int64_t l = 0; l < k; ++l)
    for (int64_t j = 0; j < n; ++j) factors[m * k + r + l * n + j] = f.vt[l * f.ldvt + j];
  const CpuSvd cpu = cpu_svd(a, m, n, k);
  for (auto kernel : {icuda::ReconstructKernel::naive, icuda::ReconstructKernel::tiled,
                      icuda::ReconstructKernel::register_blocked, icuda::ReconstructKernel::cublas}) {
    set_pixels(item, n, m, a);
    run_on_gpu(slot, item, [&](imflow::GpuContext& gpu) { icuda::reconstruct_from_factors(gpu, factors.data(), k, kernel); });
    CHECK(rel_diff(item.pixels.data(), cpu.recon.data(), cpu.recon.size()) < 1e-5);
    CHECK(item.metrics["rel_frobenius_error"] == Approx(cpu.rel_error).margin(1e-6));
    CHECK(item.metrics["psnr_db"] == Approx(cpu.psnr).epsilon(1e-5));
    CHECK(item.metrics["energy_kept"] == Approx(cpu.energy).epsilon(1e-9));
  }
}

TEST_CASE("GPU SVD on real MRI slices matches the CPU path", "[gpu][mri][svd][real]") {
  auto files = png_files(fs::path(IMFLOW_SOURCE_DIR) / "datasets/samples/mri", 1);
  for (const auto& p : png_files(fs::path(IMFLOW_SOURCE_DIR) / "datasets/data/mri/slices", 8)) files.push_back(p);
  REQUIRE(!files.empty());
  Slot slot;
  double worst[3][3] = {};  // solver x (sv rel, err diff, pixel rel)
  const icuda::SvdSolver solvers[3] = {icuda::SvdSolver::gesvdj, icuda::SvdSolver::gesvd, icuda::SvdSolver::randomized};
  for (const auto& path : files) {
    imflow::ImageBuffer image;
    imflow::read_png(path, image);
    const int64_t m = image.height(), n = image.width(), k = std::min<int64_t>(50, std::min(m, n));
    std::vector<float> a(image.data(), image.data() + m * n);
    imflow::kernels::normalize({a.data(), n, m}, imflow::kernels::NormalizeMethod::minmax);
    const CpuSvd cpu = cpu_svd(a, m, n, k);
    const std::vector<double> s_ref(cpu.s.begin(), cpu.s.end());
    for (int q = 0; q < 3; ++q) {
      const SvdCheck c = check_gpu_svd(slot, a, m, n, k, solvers[q], s_ref, cpu.rel_error, cpu.recon);
      worst[q][0] = std::max(worst[q][0], c.max_sv_rel);
      worst[q][1] = std::max(worst[q][1], c.err_diff);
      worst[q][2] = std::max(worst[q][2], c.pixel_rel);
    }
  }
  for (int q = 0; q < 3; ++q) {
    std::printf("real slices (%zu) %-10s worst: singular values rel %.2e, rel error diff %.2e, pixels rel %.2e\n",
                files.size(), icuda::svd_solver_name(solvers[q]), worst[q][0], worst[q][1], worst[q][2]);
  }
  for (int q = 0; q < 2; ++q) {  // exact solvers: the accuracy bar
    INFO(icuda::svd_solver_name(solvers[q]));
    CHECK(worst[q][0] < 1e-4);
    CHECK(worst[q][1] < 1e-4);
    CHECK(worst[q][2] < 1e-4);
  }
}

TEST_CASE("MRI pipeline on the GPU (full and hybrid) matches the CPU run", "[gpu][mri][pipeline]") {
  const fs::path samples = fs::path(IMFLOW_SOURCE_DIR) / "datasets/samples/mri";
  const fs::path base = fs::temp_directory_path() / ("imflow_gpu_svd_" + std::to_string(::getpid()));
  auto run = [&](const std::string& name, const std::string& device, const std::string& step) {
    const fs::path out = base / name;
    const std::string yaml = "input: {dir: " + samples.string() + "}\noutput: {dir: " + out.string() +
                             ", formats: [png, metrics]}\ndevice: " + device + "\nsteps: [normalize, {svd_reconstruct: " +
                             step + "}]\n";
    auto pipeline = imflow::parse_pipeline(yaml, name);
    const auto summary = imflow::run_pipeline(pipeline, {});
    CHECK(summary.failed() == 0);
    CHECK(summary.succeeded() == 3 + 62);
    return read_metrics_csv(out / "metrics.csv");
  };
  const auto cpu = run("cpu", "cpu", "{rank: 50, clip_rank: true}");
  for (const std::string step : {"{rank: 50, clip_rank: true, solver: gpu}",
                                 "{rank: 50, clip_rank: true, solver: gpu, svd_solver: gesvd, reconstruct_kernel: cublas}",
                                 "{rank: 50, clip_rank: true, solver: cpu, reconstruct: gpu, reconstruct_kernel: tiled}",
                                 "{rank: 50, clip_rank: true, solver: cpu, reconstruct: cpu}",
                                 "{energy: 0.99, solver: gpu, reconstruct_kernel: naive}"}) {
    INFO(step);
    const auto gpu = run("gpu", "cuda", step);
    REQUIRE(gpu.size() == cpu.size());
    const auto ref = step.find("energy") != std::string::npos ? run("cpu_energy", "cpu", "{energy: 0.99}") : cpu;
    double worst = 0.0;
    for (const auto& [key, g] : gpu) {
      const auto& c = ref.at(key);
      CHECK(g[0] == c[0]);
      worst = std::max(worst, std::abs(g[1] - c[1]));
      CHECK(std::abs(g[2] - c[2]) < 1e-4);
    }
    CHECK(worst < 1e-4);
  }
  fs::remove_all(base);
}

TEST_CASE("A real SPM volume with NaN voxels through normalize nonfinite: zero: GPU runs match the CPU run",
          "[gpu][mri][pipeline][real]") {
  const fs::path samples = fs::path(IMFLOW_SOURCE_DIR) / "datasets/samples/mri-masked";
  const fs::path base = fs::temp_directory_path() / ("imflow_gpu_masked_" + std::to_string(::getpid()));
  auto run = [&](const std::string& name, const std::string& device, int batch, const std::string& step) {
    const fs::path out = base / name;
    const std::string yaml = "input: {dir: " + samples.string() + "}\noutput: {dir: " + out.string() +
                             ", formats: [metrics]}\ndevice: " + device + "\nbatch: " + std::to_string(batch) +
                             "\nsteps: [{normalize: {nonfinite: zero}}, {svd_reconstruct: " + step + "}]\n";
    auto pipeline = imflow::parse_pipeline(yaml, name);
    const auto summary = imflow::run_pipeline(pipeline, {});
    CHECK(summary.failed() == 0);
    CHECK(summary.succeeded() == 3);
    return read_metrics_csv(out / "metrics.csv");
  };
  const auto cpu = run("cpu", "cpu", 1, "{rank: 10, clip_rank: true}");
  REQUIRE(cpu.size() == 3);
  std::vector<double> zeroed;
  for (const auto& [key, c] : cpu) zeroed.push_back(c[3]);
  CHECK(zeroed == std::vector<double>{74, 40, 39});  // the file's NaN voxels per slice (nibabel: the same)
  for (const auto& [batch, step] : std::vector<std::pair<int, std::string>>{
           {1, "{rank: 10, clip_rank: true, solver: gpu, svd_solver: gesvdj}"},
           {4, "{rank: 10, clip_rank: true, solver: gpu}"},
           {1, "{rank: 10, clip_rank: true, solver: cpu, reconstruct: gpu}"}}) {
    INFO(step << " batch " << batch);
    const auto gpu = run("gpu", "cuda", batch, step);
    REQUIRE(gpu.size() == cpu.size());
    for (const auto& [key, g] : gpu) {
      const auto& c = cpu.at(key);
      CHECK(g[0] == c[0]);
      CHECK(std::abs(g[1] - c[1]) < 1e-4);
      CHECK(std::abs(g[2] - c[2]) < 1e-4);
      CHECK(g[3] == c[3]);
    }
  }
  fs::remove_all(base);
}
