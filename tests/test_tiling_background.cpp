// The tiled background pre-pass: StreamingKappaSigma (radix histograms fed in blocks) gives the
// whole-image kappa_sigma_clip's median exactly, its iterations and counts, and its std.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "imflow/kernels/background.hpp"
#include "imflow/kernels/background_histogram.hpp"

using imflow::BackgroundStats;
using imflow::ConstImageView;
using imflow::kernels::kappa_sigma_clip;
using imflow::kernels::StreamingKappaSigma;
using imflow::kernels::streaming_kappa_sigma;

namespace {
void check_same(const BackgroundStats& whole, const BackgroundStats& streamed) {
  INFO("whole: median " << whole.median << " std " << whole.std << " iterations " << whole.iterations << " kept "
                        << whole.kept);
  INFO("streamed: median " << streamed.median << " std " << streamed.std << " iterations " << streamed.iterations
                           << " kept " << streamed.kept);
  CHECK(streamed.valid == whole.valid);
  CHECK(streamed.iterations == whole.iterations);
  CHECK(streamed.kept == whole.kept);
  if (std::isnan(whole.median)) {
    CHECK(std::isnan(streamed.median));
    CHECK(std::isnan(streamed.std));
    return;
  }
  CHECK(streamed.median == whole.median);
  CHECK(std::abs(streamed.std - whole.std) <= 1e-9 * std::abs(whole.std) + 1e-12 * std::abs(whole.median));
}

BackgroundStats whole_image(const std::vector<float>& pixels, int64_t width, double kappa = 3.0, int max_iters = 100) {
  std::vector<float> work;
  return kappa_sigma_clip(ConstImageView{pixels.data(), width, static_cast<int64_t>(pixels.size()) / width}, kappa,
                          max_iters, work);
}

std::vector<float> sky(int64_t n, double level, double sigma, unsigned seed, int stars) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(level, sigma);
  std::uniform_int_distribution<int64_t> where(0, n - 1);
  std::vector<float> pixels(static_cast<size_t>(n));
  for (auto& p : pixels) p = static_cast<float>(noise(rng));
  for (int s = 0; s < stars; ++s) pixels[static_cast<size_t>(where(rng))] += static_cast<float>(50 * sigma * (1 + s % 7));
  return pixels;
}
}  // namespace

TEST_CASE("key order is float order", "[tiling][background]") {
  const std::vector<float> values = {-std::numeric_limits<float>::max(), -1e10f, -1.0f, -1e-30f, -0.0f, 0.0f,
                                     1e-40f, 1e-30f, 1.0f, 1.5f, 1e10f, std::numeric_limits<float>::max()};
  for (size_t i = 0; i + 1 < values.size(); ++i) {
    CHECK(StreamingKappaSigma::key_of(values[i]) < StreamingKappaSigma::key_of(values[i + 1]));
    CHECK(StreamingKappaSigma::value_of(StreamingKappaSigma::key_of(values[i])) == values[i]);
  }
}

TEST_CASE("streamed kappa-sigma equals the whole-image kernel", "[tiling][background]") {
  const int64_t width = 317;
  SECTION("sky 1000 +- 30 with stars (integer-like spread)") {
    const auto pixels = sky(width * 211, 1000.0, 30.0, 1, 400);
    for (int64_t block : {1, 7, 64, 1000}) check_same(whole_image(pixels, width), streaming_kappa_sigma({pixels.data(), width, 211}, 3.0, 100, block));
  }
  SECTION("sky much narrower than a prefix (10000 +- 0.5)") {
    const auto pixels = sky(width * 200, 10000.0, 0.5, 2, 300);
    check_same(whole_image(pixels, width), streaming_kappa_sigma({pixels.data(), width, 200}, 3.0, 100, 13));
  }
  SECTION("background-subtracted sky around zero") {
    const auto pixels = sky(width * 150, 0.0, 1.0, 3, 200);
    check_same(whole_image(pixels, width), streaming_kappa_sigma({pixels.data(), width, 150}, 3.0, 100, 50));
    check_same(whole_image(pixels, width, 2.0, 5), streaming_kappa_sigma({pixels.data(), width, 150}, 2.0, 5, 50));
  }
  SECTION("integer data with many ties, even and odd counts") {
    std::mt19937 rng(4);
    std::poisson_distribution<int> counts(20);
    for (int64_t n : {width * 100, width * 100 + 1}) {
      std::vector<float> pixels(static_cast<size_t>(n));
      for (auto& p : pixels) p = static_cast<float>(counts(rng));
      pixels[5] = 5000.f;
      check_same(whole_image(pixels, n), streaming_kappa_sigma({pixels.data(), n, 1}, 3.0, 100, 1));
      check_same(whole_image(pixels, n, 1.0, 100), streaming_kappa_sigma({pixels.data(), n, 1}, 1.0, 100, 1));
    }
  }
  SECTION("NaN, Inf, constant, all-NaN, one pixel") {
    auto pixels = sky(width * 40, 50.0, 2.0, 5, 10);
    for (size_t i = 0; i < pixels.size(); i += 17) pixels[i] = std::numeric_limits<float>::quiet_NaN();
    pixels[3] = std::numeric_limits<float>::infinity();
    pixels[4] = -std::numeric_limits<float>::infinity();
    check_same(whole_image(pixels, width), streaming_kappa_sigma({pixels.data(), width, 40}, 3.0, 100, 3));
    const std::vector<float> constant(1000, 7.25f);
    check_same(whole_image(constant, 100), streaming_kappa_sigma({constant.data(), 100, 10}, 3.0, 100, 3));
    const std::vector<float> nans(64, std::numeric_limits<float>::quiet_NaN());
    check_same(whole_image(nans, 8), streaming_kappa_sigma({nans.data(), 8, 8}, 3.0, 100, 3));
    const std::vector<float> one = {42.f};
    check_same(whole_image(one, 1), streaming_kappa_sigma({one.data(), 1, 1}, 3.0, 100, 1));
  }
  SECTION("wide dynamic range: values spread over many decades and both signs") {
    std::mt19937 rng(6);
    std::normal_distribution<double> exponent(0.0, 8.0);
    std::vector<float> pixels(static_cast<size_t>(width) * 100);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>((i % 3 ? 1 : -1) * std::exp(exponent(rng)));
    check_same(whole_image(pixels, width), streaming_kappa_sigma({pixels.data(), width, 100}, 3.0, 100, 9));
  }
}

TEST_CASE("few passes over the data on a typical sky", "[tiling][background]") {
  const int64_t width = 500;
  const auto pixels = sky(width * 400, 1000.0, 30.0, 7, 2000);
  StreamingKappaSigma stats(3.0, 100);
  int passes = 0;
  do {
    auto pass = stats.start_pass();
    pass.add(pixels.data(), width, 400, width);
    stats.merge(pass);
    ++passes;
  } while (!stats.finish_pass());
  check_same(whole_image(pixels, width), stats.result());
  CHECK(passes <= 4);
  CHECK(stats.passes() == passes);
}

TEST_CASE("accumulators fold more than a million refined values and merge in any form", "[tiling][background]") {
  // A quantized sky whose few prefixes hold every pixel: a refinement pass buffers more values
  // than one batch holds; rows go alternately to two accumulators, merged by copy or by move.
  const int64_t width = 1024, height = 2100;
  auto pixels = sky(width * height, 1000.0, 3.0, 8, 500);
  for (auto& p : pixels) p = std::round(p);
  const BackgroundStats whole = whole_image(pixels, width);
  check_same(whole, streaming_kappa_sigma({pixels.data(), width, height}, 3.0, 100, height));
  for (bool by_move : {false, true}) {
    StreamingKappaSigma stats(3.0, 100);
    do {
      std::vector<StreamingKappaSigma::Pass> passes;
      passes.push_back(stats.start_pass());
      passes.push_back(stats.start_pass());
      for (int64_t y = 0; y < height; ++y) passes[static_cast<size_t>(y % 2)].add(pixels.data() + y * width, width, 1, width);
      for (auto& pass : passes) {
        if (by_move) stats.merge(std::move(pass));
        else stats.merge(pass);
      }
    } while (!stats.finish_pass());
    check_same(whole, stats.result());
  }
}

TEST_CASE("a thread's kept bins and keys give each image its own statistics", "[tiling][background]") {
  // The passes hand their storage to the next on the same thread: a large image that fills the
  // key buffer, a small one, then the large one again, each exactly as the whole-image kernel.
  const int64_t width = 1024, height = 1100;
  auto large = sky(width * height, 1000.0, 3.0, 9, 500);
  for (auto& p : large) p = std::round(p);
  const auto small = sky(317 * 50, -20.0, 0.25, 10, 30);
  for (int round = 0; round < 2; ++round) {
    check_same(whole_image(large, width), streaming_kappa_sigma({large.data(), width, height}, 3.0, 100, height));
    check_same(whole_image(small, 317), streaming_kappa_sigma({small.data(), 317, 50}, 3.0, 100, 50));
  }
}
