// Small images through every GPU kernel (background, segment, label, measure,
// convolve, normalize, SVD solvers and reconstruction kernels, deblend), each against the CPU: the
// `[sanitize]` set that tools/gpu/sanitize.sh runs under compute-sanitizer, where racecheck
// makes kernels many times slower and full-size tests did not finish in time.
#include <algorithm>
#include <cmath>

#include "cuda/normalize.hpp"
#include "cuda/reconstruct.hpp"
#include "cuda/svd.hpp"
#include "deblend_check.hpp"
#include "gpu_test_helpers.hpp"
#include "imflow/kernels/normalize.hpp"
#include "imflow/kernels/reconstruct.hpp"
#include "imflow/kernels/svd.hpp"

using namespace gpu_test;
using imflow::kernels::ConvolveMode;

namespace {

// An m x n row-major matrix of exact rank `rank` (sum of random outer products) plus nothing else,
// so that every solver, the randomized one included, recovers it at k = rank.
std::vector<float> low_rank(int64_t m, int64_t n, int rank, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  std::vector<float> a(static_cast<size_t>(m * n), 0.0f);
  for (int l = 0; l < rank; ++l) {
    std::vector<float> u(static_cast<size_t>(m)), v(static_cast<size_t>(n));
    for (auto& x : u) x = g(rng);
    for (auto& x : v) x = g(rng);
    const float s = 10.0f / static_cast<float>(1 + l);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) a[i * n + j] += s * u[i] * v[j];
  }
  return a;
}

}  // namespace

TEST_CASE("sanitize set: background, segment, label, measure on small skies", "[gpu][sanitize][pipeline]") {
  Slot slot;
  WorkItem item;
  const int64_t sizes[][2] = {{256, 256}, {217, 181}, {1, 300}};
  uint32_t seed = fresh_seed("sanitize set pipeline");
  for (const auto& s : sizes) {
    fill_sky(item, s[0], s[1], seed++, 30);
    for (int c : {4, 8}) {
      INFO(s[0] << "x" << s[1] << " connectivity " << c << " seed " << seed - 1);
      check_pipeline(slot, item, 3.0, 100, 3.0, c);
      check_pipeline(slot, item, 3.0, 100, 0.0, c);  // about half the pixels: many merges in label
    }
  }
}

TEST_CASE("sanitize set: background on edge shapes and ties, the wide peak search", "[gpu][sanitize][background][measure]") {
  Slot slot;
  WorkItem item;
  const int64_t sizes[][2] = {{1, 1}, {2, 1}, {1, 777}, {777, 1}, {64, 63}};
  uint32_t seed = fresh_seed("sanitize set background");
  std::vector<float> work;
  auto check_against_cpu = [&](double kappa) {
    const auto cpu = imflow::kernels::kappa_sigma_clip(item.pixels.view(), kappa, 100, work);
    run_item(slot, item, [&](GpuContext& gpu) { imflow::cuda::background(gpu, kappa, 100); }, {});
    REQUIRE(item.background.has_value());
    check_background(*item.background, cpu);
  };
  for (const auto& s : sizes) {
    INFO(s[0] << "x" << s[1] << " seed " << seed);
    fill_sky(item, s[0], s[1], seed++, 3);
    check_against_cpu(3.0);
    check_against_cpu(0.1);  // passes that would clip everything
  }
  make_pinned(item, 101, 50);  // integer values: many ties, an even count
  std::mt19937 rng(seed);
  std::poisson_distribution<int> poisson(20);
  for (auto& v : item.pixels) v = static_cast<float>(poisson(rng));
  check_against_cpu(3.0);

  fill_sky(item, 256, 256, seed, 30);
  slot.gpu.force_wide_peak = true;
  for (int c : {4, 8}) check_pipeline(slot, item, 3.0, 100, 1.0, c);
  slot.gpu.force_wide_peak = false;
}

TEST_CASE("sanitize set: convolution (separable, general, same, full, into detection)", "[gpu][sanitize][convolve]") {
  Slot slot;
  WorkItem item;
  fill_sky(item, 256, 256, fresh_seed("sanitize set convolution"), 30);
  imflow::ImageBuffer gauss;
  imflow::kernels::gaussian_kernel(5, 1.2, gauss);
  std::vector<float> odd(7 * 4);
  for (size_t i = 0; i < odd.size(); ++i) odd[i] = 0.1f * static_cast<float>((i * 7) % 11) - 0.3f;
  struct Case { const float* k; int kw, kh; ConvolveMode mode; bool separable; };
  for (const Case c : {Case{gauss.data(), 5, 5, ConvolveMode::same, true}, Case{gauss.data(), 5, 5, ConvolveMode::full, true},
                       Case{gauss.data(), 5, 5, ConvolveMode::same, false}, Case{odd.data(), 7, 4, ConvolveMode::same, false},
                       Case{odd.data(), 7, 4, ConvolveMode::full, false}}) {
    INFO("kernel " << c.kw << "x" << c.kh << (c.mode == ConvolveMode::full ? " full" : " same")
                   << (c.separable ? " separable allowed" : " general"));
    const int64_t ow = imflow::kernels::convolved_width(256, c.kw, c.mode);
    const int64_t oh = imflow::kernels::convolved_height(256, c.kh, c.mode);
    imflow::ImageBuffer expected;
    expected.resize(ow, oh);
    imflow::kernels::convolve2d_general(item.pixels.view(), {c.k, c.kw, c.kh}, c.mode, expected.view());
    WorkItem out;
    make_pinned(out, 256, 256);
    std::copy(item.pixels.begin(), item.pixels.end(), out.pixels.begin());
    run_item(slot, out, [&](GpuContext& gpu) { imflow::cuda::convolve(gpu, c.k, c.kw, c.kh, c.mode, false, c.separable); },
             {false, false, false, true});
    REQUIRE(out.pixels.width() == ow);
    REQUIRE(out.pixels.height() == oh);
    double largest = 0.0;
    for (float v : expected)
      if (std::isfinite(v)) largest = std::max(largest, std::abs(static_cast<double>(v)));
    int64_t bad = 0;
    for (int64_t i = 0; i < ow * oh; ++i) {
      const float e = expected.data()[i], g = out.pixels.data()[i];
      if (std::isnan(e) != std::isnan(g) || (!std::isnan(e) && std::abs(double(e) - g) > 1e-5 * largest)) ++bad;
    }
    CHECK(bad == 0);
  }

  // Into the detection image, then the rest of the pipeline segments on it.
  run_item(slot, item, [&](GpuContext& gpu) {
    imflow::cuda::convolve(gpu, gauss.data(), 5, 5, ConvolveMode::same, true);
    imflow::cuda::background(gpu, 3.0, 100);
    imflow::cuda::segment(gpu, 3.0, false);
    imflow::cuda::label(gpu, 8);
    imflow::cuda::measure(gpu);
  });
  REQUIRE(item.detection.width() == 256);
  const CpuResult cpu = cpu_pipeline(item.pixels.view(), item.detection.view(), 3.0, 100, *item.threshold, 8);
  check_background(*item.background, cpu.background);
  CHECK(item.mask == cpu.mask);
  CHECK(item.labels == cpu.labels);
  check_catalog(*item.catalog, cpu.catalog);
}

TEST_CASE("sanitize set: normalize (minmax, zscore)", "[gpu][sanitize][mri]") {
  Slot slot;
  for (const bool zscore : {false, true}) {
    WorkItem cpu, gpu;
    fill_sky(cpu, 256, 256, 11, 30);
    fill_sky(gpu, 256, 256, 11, 30);
    const auto method = zscore ? imflow::kernels::NormalizeMethod::zscore : imflow::kernels::NormalizeMethod::minmax;
    const imflow::Normalization ref = imflow::kernels::normalize(cpu.pixels.view(), method);
    run_item(slot, gpu, [&](GpuContext& g) { imflow::cuda::normalize(g, zscore); }, {false, false, false, true});
    REQUIRE(gpu.normalization.has_value());
    CHECK(gpu.normalization->offset == Approx(ref.offset).epsilon(1e-12).margin(1e-12));
    CHECK(gpu.normalization->scale == Approx(ref.scale).epsilon(1e-12).margin(1e-12));
    int64_t mismatches = 0;
    for (int64_t i = 0; i < 256 * 256; ++i) {
      const float a = gpu.pixels.data()[i], b = cpu.pixels.data()[i];
      if (std::isnan(b) ? !std::isnan(a) : (std::isinf(b) ? a != b : std::abs(a - b) > 1e-6f * (1.0f + std::abs(b)))) ++mismatches;
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("sanitize set: SVD solvers and reconstruction kernels on a rank-8 matrix", "[gpu][sanitize][mri][svd]") {
  Slot slot;
  const int64_t m = 96, n = 128, k = 8;
  const auto a = low_rank(m, n, static_cast<int>(k), 17);
  std::vector<float> work;
  const auto f = imflow::kernels::svd_thin({a.data(), n, m}, work);
  std::vector<float> recon(static_cast<size_t>(m * n));
  imflow::kernels::reconstruct_blocked(f, k, recon.data(), n);
  const auto ref = imflow::kernels::reconstruction_metrics({a.data(), n, m}, {recon.data(), n, m}, f.s, f.r, k);
  namespace icuda = imflow::cuda;
  for (auto solver : {icuda::SvdSolver::gesvdj, icuda::SvdSolver::gesvd, icuda::SvdSolver::randomized})
    for (auto kernel : {icuda::ReconstructKernel::naive, icuda::ReconstructKernel::tiled,
                        icuda::ReconstructKernel::register_blocked, icuda::ReconstructKernel::cublas}) {
      INFO(icuda::svd_solver_name(solver) << " " << icuda::reconstruct_kernel_name(kernel));
      WorkItem item;
      make_pinned(item, n, m);
      std::copy(a.begin(), a.end(), item.pixels.data());
      icuda::SvdOptions options;
      options.solver = solver;
      options.kernel = kernel;
      options.rank = k;
      run_item(slot, item, [&](GpuContext& gpu) { icuda::svd_reconstruct(gpu, options); }, {false, false, false, true});
      CHECK(item.metrics["rank"] == k);
      CHECK(item.metrics["rel_frobenius_error"] < 1e-4);  // rank 8 at k = 8: round-off only
      CHECK(ref.rel_frobenius_error < 1e-4);
      CHECK(rel_diff(item.pixels.data(), recon.data(), recon.size()) < 1e-4);
    }
}

TEST_CASE("sanitize set: deblending (split, allocation, CLEAN) on small fields", "[gpu][sanitize][deblend]") {
  imflow::cuda::Stream stream;
  imflow::cuda::DeblendWorkspace workspace;
  const uint32_t seed = fresh_seed("sanitize set deblend");
  deblend_test::DeblendParams params;
  deblend_test::check("small pairs", deblend_test::stars(seed, 96, 80, 25, true, true), params, workspace, stream);
  deblend_test::Field crowd = deblend_test::crowd(120, 120, 6, 6, 12.0, 25.0, seed + 1);
  crowd.threshold = 3.0f;
  params.mincont = 1e-4;
  deblend_test::check("small crowd", crowd, params, workspace, stream, {true, true});
  params.clean_style = deblend_test::DeblendCleanStyle::sextractor;
  params.allocation = deblend_test::DeblendAllocation::sextractor_random;
  deblend_test::check("small crowd, SExtractor's draws and CLEAN", crowd, params, workspace, stream);
  params.clean_style = deblend_test::DeblendCleanStyle::sep;
  params.clean = false;
  params.allocation = deblend_test::DeblendAllocation::most_probable;
  deblend_test::check("small crowd, no CLEAN", crowd, params, workspace, stream);
}
