// The batched GPU SVD solvers (gesvda with its Jacobi fallback, jacobi) on matrices of known
// spectrum with fresh random seeds (square, tall, wide, rank-deficient, all-zero), a bad image that
// must not poison its batch-mates, the energy rule, and real slices against the CPU path. Batched
// normalize: test_gpu_normalize_batched.cpp; the engine's batch mode: test_gpu_batch_mode.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cuda/gpu_batch.hpp"
#include "cuda/normalize_batched.hpp"
#include "cuda/svd.hpp"
#include "cuda/svd_batched.hpp"
#include "gpu_test_helpers.hpp"
#include "imflow/io/png.hpp"
#include "imflow/kernels/normalize.hpp"
#include "svd_test_helpers.hpp"

using gpu_test::Slot;
using imflow::WorkItem;
using namespace svd_test;
namespace icuda = imflow::cuda;
namespace fs = std::filesystem;

namespace {

constexpr icuda::SvdSolver kBatchedSolvers[] = {icuda::SvdSolver::gesvda, icuda::SvdSolver::jacobi};

struct BatchRun {
  std::vector<WorkItem> items;
  std::vector<std::string> errors;     // per item: empty, or what collect_batch_item threw
  std::vector<std::vector<float>> s;   // per item: the singular values the solver returned
};

// `images` (all m x n) through one GpuBatch: upload, [normalize,] batched SVD, download, collect.
BatchRun run_batch(Slot& slot, const std::vector<std::vector<float>>& images, int64_t m, int64_t n,
                   const icuda::SvdOptions& options, bool normalize_first = false, bool force_fallback = false) {
  BatchRun run;
  run.items.resize(images.size());
  std::vector<WorkItem*> pointers;
  for (size_t b = 0; b < images.size(); ++b) {
    set_pixels(run.items[b], n, m, images[b]);
    pointers.push_back(&run.items[b]);
  }
  const int count = static_cast<int>(images.size());
  imflow::GpuBatch batch(0, slot.stream.get());
  if (force_fallback) icuda::force_gesvda_fallback(batch.svd, batch.stream, true);
  icuda::enqueue_batch_upload(batch, pointers.data(), count);
  if (normalize_first) {
    icuda::normalize_batched(batch.images.data(), batch.pixels(), count, batch.results.data(), false, false, batch.stream);
    batch.has_normalization = batch.image_modified = true;
  }
  icuda::SvdBatchJob job{batch.images.data(), batch.spare.data(), static_cast<int>(m), static_cast<int>(n), count,
                         batch.results.data()};
  icuda::svd_reconstruct_batched(batch.svd, batch.stream, batch.max_shared_optin, options, job);
  swap(batch.images, batch.spare);
  batch.image_modified = batch.has_svd_metrics = true;
  icuda::enqueue_batch_download(batch, pointers.data(), count);
  const auto spectrum = icuda::last_batch_spectrum(batch.svd);
  for (int b = 0; b < count; ++b) {
    // Only the values the solver wrote (the stride's padding is never written).
    run.s.push_back(download(spectrum.s + static_cast<size_t>(spectrum.stride) * b, static_cast<size_t>(spectrum.count),
                             slot.stream.get()));
    std::string error;
    try {
      icuda::collect_batch_item(batch, b, run.items[b]);
    } catch (const std::exception& e) {
      error = e.what();
    }
    run.errors.push_back(error);
  }
  return run;
}

uint32_t fresh_seed() { return gpu_test::fresh_seed("batched SVD"); }  // logged; IMFLOW_TEST_SEED repeats it

}  // namespace

TEST_CASE("Batched GPU SVD on matrices of known spectrum (fresh seeds): square, tall, wide, rank-deficient",
          "[gpu][mri][svd][batched]") {
  Slot slot;
  struct Case { int64_t m, n, k, rank; double decay; };
  for (const Case c : {Case{64, 64, 20, 64, 0.9}, Case{217, 181, 50, 181, 0.97}, Case{181, 217, 50, 181, 0.97},
                       Case{256, 256, 50, 256, 0.98}, Case{100, 80, 20, 10, 0.8}, Case{30, 200, 5, 30, 0.7}}) {
    const uint32_t seed = fresh_seed();
    std::vector<double> sigma(static_cast<size_t>(std::min(c.m, c.n)), 0.0);
    for (int64_t l = 0; l < c.rank; ++l) sigma[l] = 50.0 * std::pow(c.decay, static_cast<double>(l));
    double tail = 0.0, total = 0.0;
    for (size_t l = 0; l < sigma.size(); ++l) {
      total += sigma[l] * sigma[l];
      if (static_cast<int64_t>(l) >= c.k) tail += sigma[l] * sigma[l];
    }
    const double err_exact = std::sqrt(tail / total);
    std::vector<std::vector<float>> images;
    std::vector<CpuSvd> refs;
    for (int b = 0; b < 3; ++b) {
      images.push_back(known_spectrum(c.m, c.n, std::vector<double>(sigma.begin(), sigma.begin() + c.rank), seed + b));
      refs.push_back(cpu_svd(images.back(), c.m, c.n, c.k));
    }
    for (auto solver : kBatchedSolvers) {
      INFO(icuda::svd_solver_name(solver) << " " << c.m << "x" << c.n << " k " << c.k << " rank " << c.rank << " seed "
                                          << seed);
      icuda::SvdOptions options;
      options.solver = solver;
      options.rank = c.k;
      const BatchRun run = run_batch(slot, images, c.m, c.n, options);
      for (size_t b = 0; b < images.size(); ++b) {
        INFO("item " << b << ": " << run.errors[b]);
        REQUIRE(run.errors[b].empty());
        const auto& metrics = run.items[b].metrics;
        CHECK(metrics.at("rank") == c.k);
        CHECK(metrics.at("singular_values") == std::min(c.m, c.n));
        CHECK(std::abs(metrics.at("rel_frobenius_error") - err_exact) < 1e-4);
        double sv = 0.0;
        for (int64_t l = 0; l < c.k; ++l) {
          const double ref = sigma[l];
          sv = std::max(sv, ref > 1e-3 * sigma[0] ? std::abs(run.s[b][l] - ref) / ref : std::abs(run.s[b][l] - ref) / sigma[0]);
        }
        CHECK(sv < 1e-4);
        CHECK(rel_diff(run.items[b].pixels.data(), refs[b].recon.data(), refs[b].recon.size()) < 1e-4);
      }
    }
  }
}

TEST_CASE("gesvda's Jacobi fallback: every image redone gives the CPU result (tall, wide, zero, NaN)",
          "[gpu][mri][svd][batched]") {
  Slot slot;
  struct Case { int64_t m, n, k; };
  for (const Case c : {Case{40, 30, 8}, Case{24, 36, 6}, Case{217, 181, 50}}) {
    std::vector<double> sigma;
    for (int l = 0; l < 20; ++l) sigma.push_back(30.0 * std::pow(0.75, l));
    const uint32_t seed = fresh_seed();
    const auto good = known_spectrum(c.m, c.n, sigma, seed);
    auto bad = good;
    bad[3] = NAN;
    const std::vector<float> zero(static_cast<size_t>(c.m * c.n), 0.0f);
    const CpuSvd ref = cpu_svd(good, c.m, c.n, c.k);
    icuda::SvdOptions options;
    options.solver = icuda::SvdSolver::gesvda;
    options.rank = c.k;
    INFO(c.m << "x" << c.n << " seed " << seed);
    const BatchRun run = run_batch(slot, {good, zero, bad, good}, c.m, c.n, options, false, true);
    for (int b : {0, 3}) {
      INFO("item " << b << ": " << run.errors[b]);
      REQUIRE(run.errors[b].empty());
      CHECK(rel_diff(run.items[b].pixels.data(), ref.recon.data(), ref.recon.size()) < 1e-4);
      // Rank 20 < k: both errors sit at float32's noise floor (seen 1.2e-5 apart); the batched
      // solvers' bar, as above, is 1e-4.
      CHECK(run.items[b].metrics.at("rel_frobenius_error") == Approx(ref.rel_error).margin(1e-4));
      for (int64_t l = 0; l < c.k; ++l) CHECK(run.s[b][l] == Approx(ref.s[l]).epsilon(1e-4).margin(1e-4 * ref.s[0]));
    }
    REQUIRE(run.errors[1].empty());
    CHECK(run.items[1].metrics.at("rel_frobenius_error") == 0.0);
    CHECK(run.errors[2].find("NaN/Inf") != std::string::npos);
  }
}

TEST_CASE("Batched GPU SVD: all-zero and NaN images do not poison their batch-mates; energy rule; clip_rank",
          "[gpu][mri][svd][batched]") {
  Slot slot;
  const int64_t m = 90, n = 60;
  std::vector<double> sigma(60);
  for (size_t l = 0; l < sigma.size(); ++l) sigma[l] = 10.0 * std::pow(0.8, static_cast<double>(l));
  const auto good = known_spectrum(m, n, sigma, fresh_seed());
  auto bad = good;
  bad[10] = NAN;
  const std::vector<float> zero(static_cast<size_t>(m * n), 0.0f);
  const CpuSvd ref = cpu_svd(good, m, n, 7);
  for (auto solver : kBatchedSolvers) {
    INFO(icuda::svd_solver_name(solver));
    icuda::SvdOptions options;
    options.solver = solver;
    options.rank = 7;
    const BatchRun run = run_batch(slot, {good, zero, bad, good}, m, n, options);
    for (int b : {0, 3}) {
      REQUIRE(run.errors[b].empty());
      CHECK(rel_diff(run.items[b].pixels.data(), ref.recon.data(), ref.recon.size()) < 1e-4);
      // Rank 20 < k: both errors sit at float32's noise floor (seen 1.2e-5 apart); the batched
      // solvers' bar, as above, is 1e-4.
      CHECK(run.items[b].metrics.at("rel_frobenius_error") == Approx(ref.rel_error).margin(1e-4));
      CHECK(run.items[b].metrics.at("energy_kept") == Approx(ref.energy).margin(1e-5));
    }
    REQUIRE(run.errors[1].empty());
    CHECK(run.items[1].metrics.at("rel_frobenius_error") == 0.0);
    CHECK(run.items[1].metrics.at("energy_kept") == 1.0);
    CHECK(std::isinf(run.items[1].metrics.at("psnr_db")));
    CHECK(std::all_of(run.items[1].pixels.data(), run.items[1].pixels.data() + m * n, [](float x) { return x == 0.0f; }));
    CHECK(run.errors[2].find("NaN/Inf") != std::string::npos);

    std::vector<float> work;
    const auto f = imflow::kernels::svd_thin({good.data(), n, m}, work);
    icuda::SvdOptions energy;
    energy.solver = solver;
    energy.energy = 0.95;
    const BatchRun by_energy = run_batch(slot, {good, good}, m, n, energy);
    for (int b = 0; b < 2; ++b) {
      REQUIRE(by_energy.errors[b].empty());
      CHECK(by_energy.items[b].metrics.at("rank") == imflow::kernels::rank_for_energy(f.s, f.r, 0.95));
      CHECK(by_energy.items[b].metrics.at("energy_kept") >= 0.95);
    }
    icuda::SvdOptions big;
    big.solver = solver;
    big.rank = 100;
    CHECK_THROWS_WITH(run_batch(slot, {good}, m, n, big), Catch::Contains("clip_rank"));
    big.clip_rank = true;
    const BatchRun clipped = run_batch(slot, {good}, m, n, big);
    REQUIRE(clipped.errors[0].empty());
    CHECK(clipped.items[0].metrics.at("rank") == 60);
    CHECK(clipped.items[0].metrics.at("rel_frobenius_error") < 1e-4);
  }
}

TEST_CASE("Batched GPU SVD on real MRI slices matches the CPU path", "[gpu][mri][svd][batched][real]") {
  auto files = png_files(fs::path(IMFLOW_SOURCE_DIR) / "datasets/samples/mri", 1);
  for (const auto& p : png_files(fs::path(IMFLOW_SOURCE_DIR) / "datasets/data/mri/slices", 8)) files.push_back(p);
  REQUIRE(!files.empty());
  // Group the slices by shape; each group is one batch, as the engine would form them.
  std::map<std::pair<int64_t, int64_t>, std::vector<std::vector<float>>> groups;
  for (const auto& path : files) {
    imflow::ImageBuffer image;
    imflow::read_png(path, image);
    std::vector<float> a(image.data(), image.data() + image.size());
    imflow::kernels::normalize({a.data(), image.width(), image.height()}, imflow::kernels::NormalizeMethod::minmax);
    groups[{image.height(), image.width()}].push_back(std::move(a));
  }
  Slot slot;
  for (auto solver : kBatchedSolvers) {
    double worst_sv = 0.0, worst_err = 0.0, worst_pixel = 0.0;
    size_t slices = 0, failed = 0;
    for (const auto& [shape, images] : groups) {
      const int64_t m = shape.first, n = shape.second, k = std::min<int64_t>(50, std::min(m, n));
      icuda::SvdOptions options;
      options.solver = solver;
      options.rank = k;
      const BatchRun run = run_batch(slot, images, m, n, options);
      for (size_t b = 0; b < images.size(); ++b) {
        ++slices;
        if (!run.errors[b].empty()) {
          ++failed;
          CHECK(run.errors[b].find("did not converge") != std::string::npos);
          std::printf("  %s %lldx%lld slice %zu failed: %s\n", icuda::svd_solver_name(solver), (long long)n, (long long)m, b,
                      run.errors[b].c_str());
          continue;
        }
        const CpuSvd cpu = cpu_svd(images[b], m, n, k);
        for (int64_t l = 0; l < k; ++l) {
          const double ref = cpu.s[l];
          worst_sv = std::max(worst_sv, ref > 1e-3 * cpu.s[0] ? std::abs(run.s[b][l] - ref) / ref
                                                             : std::abs(run.s[b][l] - ref) / cpu.s[0]);
        }
        worst_err = std::max(worst_err, std::abs(run.items[b].metrics.at("rel_frobenius_error") - cpu.rel_error));
        worst_pixel = std::max(worst_pixel, rel_diff(run.items[b].pixels.data(), cpu.recon.data(), cpu.recon.size()));
      }
    }
    std::printf("real slices (%zu in %zu batches) %-7s worst: singular values rel %.2e, rel error diff %.2e, pixels rel "
                "%.2e, failed %zu\n",
                slices, groups.size(), icuda::svd_solver_name(solver), worst_sv, worst_err, worst_pixel, failed);
    INFO(icuda::svd_solver_name(solver));
    // Both meet the bar on every slice: gesvda's non-converged slices (a few nearly empty ones)
    // are redone by the Jacobi kernel.
    CHECK(failed == 0);
    CHECK(worst_sv < 1e-4);
    CHECK(worst_err < 1e-4);
    CHECK(worst_pixel < 1e-4);
  }
}

// Small enough for compute-sanitizer (tools/gpu/sanitize.sh runs the [sanitize] set): both
// batched solvers, a tall and a wide shape, three items per batch.
TEST_CASE("sanitize set: batched SVD solvers on small matrices", "[gpu][sanitize][mri][batched]") {
  Slot slot;
  struct Case { int64_t m, n, k; };
  for (const Case c : {Case{40, 30, 8}, Case{24, 36, 6}}) {
    const std::vector<double> sigma = {30, 20, 12, 8, 5, 3, 2, 1, 0.5, 0.25};
    std::vector<std::vector<float>> images;
    std::vector<CpuSvd> refs;
    for (int b = 0; b < 3; ++b) {
      images.push_back(known_spectrum(c.m, c.n, sigma, 11u + static_cast<uint32_t>(b)));
      refs.push_back(cpu_svd(images.back(), c.m, c.n, c.k));
    }
    for (int variant = 0; variant < 3; ++variant) {  // gesvda, jacobi, gesvda with every image redone by jacobi
      const auto solver = variant == 1 ? icuda::SvdSolver::jacobi : icuda::SvdSolver::gesvda;
      INFO(icuda::svd_solver_name(solver) << (variant == 2 ? " (fallback forced) " : " ") << c.m << "x" << c.n);
      icuda::SvdOptions options;
      options.solver = solver;
      options.rank = c.k;
      const BatchRun run = run_batch(slot, images, c.m, c.n, options, false, variant == 2);
      for (size_t b = 0; b < images.size(); ++b) {
        INFO("item " << b << ": " << run.errors[b]);
        REQUIRE(run.errors[b].empty());
        CHECK(rel_diff(run.items[b].pixels.data(), refs[b].recon.data(), refs[b].recon.size()) < 1e-4);
      }
    }
  }
}
