// Convolution: delta responses, same vs full geometry, the lesson's kernel.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "imflow/kernels/convolve.hpp"

using namespace imflow;
using kernels::ConvolveMode;

TEST_CASE("a delta reproduces the (flipped) kernel in full mode", "[convolve]") {
  std::vector<float> image = {1};
  std::vector<float> kernel = {1, 2, 3, 4, 5, 6};  // 3 wide, 2 high
  ImageBuffer out;
  out.resize(3, 2);
  kernels::convolve2d({image.data(), 1, 1}, {kernel.data(), 3, 2}, ConvolveMode::full, out.view());
  for (int i = 0; i < 6; ++i) CHECK(out.data()[i] == kernel[i]);
}

TEST_CASE("same mode is the centred part of full mode", "[convolve]") {
  std::vector<float> image(7 * 5);
  for (size_t i = 0; i < image.size(); ++i) image[i] = std::sin(0.7f * i) + 0.1f * i;
  ImageBuffer kernel;
  kernels::gaussian_kernel(3, 0.8, kernel);
  ImageBuffer full, same;
  full.resize(9, 7);
  same.resize(7, 5);
  kernels::convolve2d({image.data(), 7, 5}, kernel.view(), ConvolveMode::full, full.view());
  kernels::convolve2d({image.data(), 7, 5}, kernel.view(), ConvolveMode::same, same.view());
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 7; ++x) CHECK(same.view()(x, y) == full.view()(x + 1, y + 1));
  // Brute-force one interior value: out(3,2) = sum k(i,j) * img(3+1-i, 2+1-j).
  double expected = 0;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 3; ++i) expected += kernel.view()(i, j) * image[(2 + 1 - j) * 7 + (3 + 1 - i)];
  CHECK(same.view()(3, 2) == Approx(expected).epsilon(1e-6));
}

TEST_CASE("Gaussian kernels: normalised, and the lesson's unnormalised 15x15", "[convolve]") {
  ImageBuffer kernel;
  kernels::gaussian_kernel(7, 1.5, kernel);
  double sum = 0;
  for (float v : kernel) sum += v;
  CHECK(sum == Approx(1.0).epsilon(1e-6));
  CHECK(kernel.view()(3, 3) > kernel.view()(2, 3));
  kernels::lesson_gaussian_kernel(kernel);
  CHECK(kernel.width() == 15);
  CHECK(kernel.view()(7, 7) == 1.0f);
  CHECK(kernel.view()(0, 0) == Approx(std::exp(-4.0)).epsilon(1e-6));  // r^2 = 8, exp(-8/2)
}

TEST_CASE("rank-1 detection: Gaussians and outer products are separable, others are not", "[convolve]") {
  std::vector<float> row, col;
  ImageBuffer kernel;
  kernels::lesson_gaussian_kernel(kernel);
  REQUIRE(kernels::separable_factors(kernel.view(), row, col));
  for (int j = 0; j < 15; ++j)
    for (int i = 0; i < 15; ++i) CHECK(double(row[i]) * col[j] == Approx(kernel.view()(i, j)).epsilon(1e-6));
  kernels::gaussian_kernel(5, 1.3, kernel);
  CHECK(kernels::separable_factors(kernel.view(), row, col));
  std::vector<float> outer = {2, -4, 6, -1, 2, -3};  // outer([1, -0.5], [2, -4, 6]): rank 1, signed
  CHECK(kernels::separable_factors({outer.data(), 3, 2}, row, col));
  std::vector<float> rank2 = {1, 2, 3, 4, 5, 6};
  CHECK_FALSE(kernels::separable_factors({rank2.data(), 3, 2}, row, col));
  std::vector<float> zeros(9, 0.0f);
  CHECK_FALSE(kernels::separable_factors({zeros.data(), 3, 3}, row, col));
  outer[4] += 1e-3f;  // a small perturbation breaks rank 1
  CHECK_FALSE(kernels::separable_factors({outer.data(), 3, 2}, row, col));
}

TEST_CASE("separable and general convolution agree (same and full, odd sizes, NaN)", "[convolve]") {
  const int64_t sizes[][2] = {{1, 1}, {1, 40}, {40, 1}, {5, 3}, {64, 37}, {131, 77}};
  ImageBuffer lesson, gauss;
  kernels::lesson_gaussian_kernel(lesson);
  kernels::gaussian_kernel(4, 0.9, gauss);  // even size: asymmetric centring in same mode
  std::vector<float> outer(7 * 3);           // 7 wide, 3 high, signed
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 7; ++i) outer[j * 7 + i] = static_cast<float>((j - 0.7) * (1.0 + 0.5 * std::cos(0.9 * i)));
  const ConstImageView kernels_[] = {lesson.view(), gauss.view(), {outer.data(), 7, 3}};
  for (const auto& s : sizes) {
    std::vector<float> image(static_cast<size_t>(s[0] * s[1]));
    for (size_t i = 0; i < image.size(); ++i) image[i] = 300.0f + 50.0f * std::sin(0.37f * i) + 0.01f * i;
    if (image.size() > 100) image[image.size() / 2] = NAN;
    for (const auto& k : kernels_) {
      std::vector<float> row, col;
      REQUIRE(kernels::separable_factors(k, row, col));
      for (ConvolveMode mode : {ConvolveMode::same, ConvolveMode::full}) {
        INFO(s[0] << "x" << s[1] << " kernel " << k.width << "x" << k.height << (mode == ConvolveMode::full ? " full" : " same"));
        const int64_t ow = kernels::convolved_width(s[0], k.width, mode), oh = kernels::convolved_height(s[1], k.height, mode);
        ImageBuffer general, separable, dispatched;
        general.resize(ow, oh);
        separable.resize(ow, oh);
        dispatched.resize(ow, oh);
        const ConstImageView img{image.data(), s[0], s[1]};
        kernels::convolve2d_general(img, k, mode, general.view());
        kernels::convolve2d_separable(img, row.data(), k.width, col.data(), k.height, mode, separable.view());
        kernels::convolve2d(img, k, mode, dispatched.view());
        double largest = 0;
        for (float v : general)
          if (std::isfinite(v)) largest = std::max(largest, std::abs(double(v)));
        int64_t bad = 0;
        for (int64_t i = 0; i < ow * oh; ++i) {
          const float g = general.data()[i], p = separable.data()[i];
          if (std::isnan(g) != std::isnan(p) || (!std::isnan(g) && std::abs(double(g) - p) > 1e-6 * largest)) ++bad;
          if (!(dispatched.data()[i] == p) && !(std::isnan(p) && std::isnan(dispatched.data()[i]))) ++bad;
        }
        CHECK(bad == 0);
      }
    }
  }
}
