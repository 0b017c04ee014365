// Kappa-sigma background on synthetic images with known answers.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "imflow/kernels/background.hpp"

using imflow::ConstImageView;
using imflow::kernels::kappa_sigma_clip;

TEST_CASE("median follows NumPy for odd and even counts", "[background]") {
  std::vector<float> odd = {5, 1, 3};
  CHECK(imflow::kernels::median_inplace(odd.data(), 3) == 3.0);
  std::vector<float> even = {4, 1, 3, 2};
  CHECK(imflow::kernels::median_inplace(even.data(), 4) == 2.5);
}

TEST_CASE("one outlier is clipped and the stats are those of the rest", "[background]") {
  // 99 pixels alternating 10 and 12 plus one huge outlier.
  std::vector<float> pixels;
  for (int i = 0; i < 99; ++i) pixels.push_back(i % 2 ? 12.f : 10.f);
  pixels.push_back(1e6f);
  std::vector<float> work;
  const auto stats = kappa_sigma_clip(ConstImageView{pixels.data(), 10, 10}, 3.0, 100, work);
  // After clipping the outlier: 50 tens, 49 twelves -> median 10, mean 10.9898..., std ~0.99995.
  CHECK(stats.kept == 99);
  CHECK(stats.median == 10.0);
  const double mean = (50 * 10.0 + 49 * 12.0) / 99.0;
  const double var = (50 * (10 - mean) * (10 - mean) + 49 * (12 - mean) * (12 - mean)) / 99.0;
  CHECK(stats.std == Approx(std::sqrt(var)).epsilon(1e-12));
  CHECK(stats.iterations == 2);
  CHECK(stats.valid == 100);
}

TEST_CASE("NaN and Inf pixels are ignored", "[background]") {
  std::vector<float> pixels = {1, 2, 3, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                               4, 5, -std::numeric_limits<float>::infinity(), 6};
  std::vector<float> work;
  const auto stats = kappa_sigma_clip(ConstImageView{pixels.data(), 9, 1}, 3.0, 100, work);
  CHECK(stats.valid == 6);
  CHECK(stats.median == 3.5);
  CHECK(stats.std == Approx(std::sqrt(17.5 / 6.0)));
}

TEST_CASE("a constant image gives std 0 after one pass, an all-NaN image NaN", "[background]") {
  std::vector<float> constant(64, 7.f), work;
  auto stats = kappa_sigma_clip(ConstImageView{constant.data(), 8, 8}, 3.0, 100, work);
  CHECK(stats.median == 7.0);
  CHECK(stats.std == 0.0);
  CHECK(stats.iterations == 1);
  CHECK(stats.kept == 64);

  std::vector<float> nans(16, std::numeric_limits<float>::quiet_NaN());
  stats = kappa_sigma_clip(ConstImageView{nans.data(), 4, 4}, 3.0, 100, work);
  CHECK(std::isnan(stats.median));
  CHECK(std::isnan(stats.std));
  CHECK(stats.valid == 0);
}

TEST_CASE("max_iters bounds the passes", "[background]") {
  // A geometric tail keeps clipping for many passes.
  std::vector<float> pixels(1000, 0.f);
  for (int i = 0; i < 30; ++i) pixels[i] = std::pow(1.6f, static_cast<float>(i));
  std::vector<float> work;
  const auto unbounded = kappa_sigma_clip(ConstImageView{pixels.data(), 1000, 1}, 3.0, 100, work);
  REQUIRE(unbounded.iterations > 2);
  const auto bounded = kappa_sigma_clip(ConstImageView{pixels.data(), 1000, 1}, 3.0, 2, work);
  CHECK(bounded.iterations == 2);
}
