// SEP's detection filters (kernels/sep_filter.hpp): the normalisation, the correlation's
// orientation and edges, and the matched filter's S/N on hand-computed values.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "imflow/kernels/sep_filter.hpp"

using namespace imflow;

TEST_CASE("SEP's kernel is divided by the sum of its magnitudes", "[sep_filter]") {
  const std::vector<float> k = {1, -2, 1, 4};
  const kernels::SepFilterKernel n = kernels::sep_filter_kernel({k.data(), 2, 2});
  CHECK(n.values == std::vector<float>{1.0f / 8, -2.0f / 8, 1.0f / 8, 4.0f / 8});
  const std::vector<float> zero = {0, 0};
  const ConstImageView zero_view{zero.data(), 2, 1};
  CHECK_THROWS_AS(kernels::sep_filter_kernel(zero_view), std::invalid_argument);
}

TEST_CASE("SEP's conv correlates without flipping, zeros outside the image", "[sep_filter]") {
  // A delta at (2, 1) of a 5 x 3 image: out(x, y) = k(2 - x + 1, 1 - y + 1) for a 3 x 3 kernel,
  // the kernel mirrored (a correlation); the kernel sums to 45 in magnitude.
  std::vector<float> image(15, 0.0f);
  image[1 * 5 + 2] = 45.0f;
  std::vector<float> k(9);
  for (int i = 0; i < 9; ++i) k[i] = static_cast<float>(i + 1);
  std::vector<float> out(15);
  kernels::sep_convolve({image.data(), 5, 3}, kernels::sep_filter_kernel({k.data(), 3, 3}), out.data());
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 5; ++x) {
      const int kx = 2 - x + 1, ky = 1 - y + 1;
      const float expected = (kx >= 0 && kx < 3 && ky >= 0 && ky < 3) ? 45.0f * (k[ky * 3 + kx] / 45.0f) : 0.0f;
      CHECK(out[y * 5 + x] == expected);
    }
  }
}

TEST_CASE("SEP's matched filter: sum k d / v over sqrt(sum k^2 / v), v = 0 left out", "[sep_filter]") {
  const std::vector<float> image = {2, 4, 6}, noise = {1, 2, 0};
  const std::vector<float> k = {1, 1, 2};
  const kernels::SepFilterKernel n = kernels::sep_filter_kernel({k.data(), 3, 1});  // 0.25 0.25 0.5
  std::vector<float> out(3);
  kernels::sep_matched_filter({image.data(), 3, 1}, noise.data(), kernels::SepNoiseKind::stddev, n, out.data());
  // x = 1: pixels 0 (k 0.25, v 1), 1 (k 0.25, v 4); pixel 2 has v = 0
  const double num = 0.25 * 2 / 1 + 0.25 * 4 / 4, den = 0.25 * 0.25 / 1 + 0.25 * 0.25 / 4;
  CHECK(out[1] == Approx(num / std::sqrt(den)).epsilon(1e-6));
  // x = 0: pixels 0 (k 0.25, v 1) and 1 (k 0.5, v 4)
  CHECK(out[0] == Approx((0.25 * 2 + 0.5 * 4 / 4) / std::sqrt(0.0625 + 0.25 / 4)).epsilon(1e-6));
  kernels::sep_matched_filter({image.data(), 3, 1}, noise.data(), kernels::SepNoiseKind::variance, n, out.data());
  CHECK(out[1] == Approx((0.25 * 2 + 0.25 * 4 / 2) / std::sqrt(0.0625 + 0.0625 / 2)).epsilon(1e-6));
}
