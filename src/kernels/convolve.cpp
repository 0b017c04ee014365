// Direct 2-D convolution with zero padding on the CPU (rows in parallel with oneTBB), and the
// Gaussian kernels the convolve step offers.
#include "imflow/kernels/convolve.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace imflow::kernels {

int64_t convolved_width(int64_t image_width, int64_t kernel_width, ConvolveMode mode) {
  return mode == ConvolveMode::full ? image_width + kernel_width - 1 : image_width;
}

int64_t convolved_height(int64_t image_height, int64_t kernel_height, ConvolveMode mode) {
  return mode == ConvolveMode::full ? image_height + kernel_height - 1 : image_height;
}

void convolve2d(ConstImageView image, ConstImageView kernel, ConvolveMode mode, ImageView out) {
  if (out.width != convolved_width(image.width, kernel.width, mode) ||
      out.height != convolved_height(image.height, kernel.height, mode)) {
    throw std::invalid_argument("convolve2d: output has the wrong size");
  }
  // out(X, Y) = sum_{j,i} kernel(i, j) * image(X + offset_x - i, Y + offset_y - j)
  const int64_t offset_x = mode == ConvolveMode::full ? 0 : (kernel.width - 1) / 2;
  const int64_t offset_y = mode == ConvolveMode::full ? 0 : (kernel.height - 1) / 2;
  tbb::parallel_for(int64_t{0}, out.height, [&](int64_t out_y) {
    const int64_t y = out_y + offset_y;  // position in full-mode coordinates
    const int64_t j_begin = std::max<int64_t>(0, y - (image.height - 1));
    const int64_t j_end = std::min<int64_t>(kernel.height, y + 1);
    for (int64_t out_x = 0; out_x < out.width; ++out_x) {
      const int64_t x = out_x + offset_x;
      const int64_t i_begin = std::max<int64_t>(0, x - (image.width - 1));
      const int64_t i_end = std::min<int64_t>(kernel.width, x + 1);
      double sum = 0.0;
      for (int64_t j = j_begin; j < j_end; ++j) {
        const float* image_row = image.row(y - j);
        const float* kernel_row = kernel.row(j);
        for (int64_t i = i_begin; i < i_end; ++i) {
          sum += static_cast<double>(kernel_row[i]) * static_cast<double>(image_row[x - i]);
        }
      }
      out(out_x, out_y) = static_cast<float>(sum);
    }
  });
}

void gaussian_kernel(int size, double sigma, ImageBuffer& out) {
  if (size < 1 || sigma <= 0.0) throw std::invalid_argument("gaussian_kernel: size >= 1 and sigma > 0 required");
  out.resize(size, size);
  const double centre = (size - 1) / 2.0;
  double total = 0.0;
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      const double dx = x - centre, dy = y - centre;
      const double value = std::exp(-(dx * dx + dy * dy) / (2.0 * sigma * sigma));
      out.view()(x, y) = static_cast<float>(value);
      total += value;
    }
  }
  for (float& value : out) value = static_cast<float>(value / total);
}

void lesson_gaussian_kernel(ImageBuffer& out) {
  constexpr int size = 15;
  out.resize(size, size);
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      const double cx = -2.0 + 4.0 * x / (size - 1);
      const double cy = -2.0 + 4.0 * y / (size - 1);
      const double distance = std::sqrt(cx * cx + cy * cy);
      out.view()(x, y) = static_cast<float>(std::exp(-(distance * distance) / 2.0));
    }
  }
}

}  // namespace imflow::kernels
