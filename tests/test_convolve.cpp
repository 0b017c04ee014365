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
