// 2-D convolution with zero padding on the CPU (rows in parallel with oneTBB): a two-pass path for
// rank-1 (separable) kernels, the direct general one otherwise; and the step's Gaussian kernels.
#include "imflow/kernels/convolve.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace imflow::kernels {

int64_t convolved_width(int64_t image_width, int64_t kernel_width, ConvolveMode mode) {
  return mode == ConvolveMode::full ? image_width + kernel_width - 1 : image_width;
}

int64_t convolved_height(int64_t image_height, int64_t kernel_height, ConvolveMode mode) {
  return mode == ConvolveMode::full ? image_height + kernel_height - 1 : image_height;
}

namespace {
void check_output(ConstImageView image, int64_t kw, int64_t kh, ConvolveMode mode, ImageView out) {
  if (out.width != convolved_width(image.width, kw, mode) || out.height != convolved_height(image.height, kh, mode)) {
    throw std::invalid_argument("convolve2d: output has the wrong size");
  }
}
}  // namespace

void convolve2d(ConstImageView image, ConstImageView kernel, ConvolveMode mode, ImageView out) {
  std::vector<float> row, col;
  if (kernel.width * kernel.height > 1 && separable_factors(kernel, row, col)) {
    convolve2d_separable(image, row.data(), kernel.width, col.data(), kernel.height, mode, out);
  } else {
    convolve2d_general(image, kernel, mode, out);
  }
}

bool separable_factors(ConstImageView kernel, std::vector<float>& row, std::vector<float>& col, double tolerance) {
  const int64_t kw = kernel.width, kh = kernel.height;
  if (kw < 1 || kh < 1) return false;
  int64_t px = 0, py = 0;
  double largest = -1.0;
  for (int64_t j = 0; j < kh; ++j)
    for (int64_t i = 0; i < kw; ++i) {
      const double v = kernel(i, j);
      if (!std::isfinite(v)) return false;
      if (std::abs(v) > largest) largest = std::abs(v), px = i, py = j;
    }
  if (largest <= 0.0) return false;  // all zeros: the general path (trivially exact)
  // kernel(i, j) = col[j] * row[i] with col = the column through the pivot, row = its row / pivot.
  const double pivot = kernel(px, py);
  row.resize(static_cast<size_t>(kw));
  col.resize(static_cast<size_t>(kh));
  for (int64_t i = 0; i < kw; ++i) row[static_cast<size_t>(i)] = static_cast<float>(kernel(i, py) / pivot);
  for (int64_t j = 0; j < kh; ++j) col[static_cast<size_t>(j)] = kernel(px, j);
  const double limit = tolerance * largest;
  for (int64_t j = 0; j < kh; ++j)
    for (int64_t i = 0; i < kw; ++i) {
      const double product = static_cast<double>(col[static_cast<size_t>(j)]) * row[static_cast<size_t>(i)];
      if (std::abs(product - kernel(i, j)) > limit) return false;
    }
  return true;
}

void convolve2d_separable(ConstImageView image, const float* row, int64_t kw, const float* col, int64_t kh,
                          ConvolveMode mode, ImageView out) {
  check_output(image, kw, kh, mode, out);
  if (out.width == 0 || out.height == 0) return;
  if (image.width == 0 || image.height == 0) {  // full mode of an empty image: zeros
    for (int64_t y = 0; y < out.height; ++y) std::fill(out.row(y), out.row(y) + out.width, 0.0f);
    return;
  }
  const int64_t offset_x = mode == ConvolveMode::full ? 0 : (kw - 1) / 2;
  const int64_t offset_y = mode == ConvolveMode::full ? 0 : (kh - 1) / 2;
  // Pass 1, along rows: tmp(X, y) = sum_i row[i] * image(X + offset_x - i, y), float64.
  std::vector<double> tmp(static_cast<size_t>(image.height * out.width));
  tbb::parallel_for(int64_t{0}, image.height, [&](int64_t y) {
    const float* src = image.row(y);
    double* dst = tmp.data() + y * out.width;
    for (int64_t out_x = 0; out_x < out.width; ++out_x) {
      const int64_t x = out_x + offset_x;
      const int64_t i_begin = std::max<int64_t>(0, x - (image.width - 1));
      const int64_t i_end = std::min<int64_t>(kw, x + 1);
      double sum = 0.0;
      for (int64_t i = i_begin; i < i_end; ++i) sum += static_cast<double>(row[i]) * static_cast<double>(src[x - i]);
      dst[out_x] = sum;
    }
  });
  // Pass 2, along columns: out(X, Y) = sum_j col[j] * tmp(X, Y + offset_y - j).
  tbb::parallel_for(int64_t{0}, out.height, [&](int64_t out_y) {
    const int64_t y = out_y + offset_y;
    const int64_t j_begin = std::max<int64_t>(0, y - (image.height - 1));
    const int64_t j_end = std::min<int64_t>(kh, y + 1);
    std::vector<double> acc(static_cast<size_t>(out.width), 0.0);
    for (int64_t j = j_begin; j < j_end; ++j) {
      const double w = col[j];
      const double* src = tmp.data() + (y - j) * out.width;
      for (int64_t x = 0; x < out.width; ++x) acc[static_cast<size_t>(x)] += w * src[x];
    }
    float* dst = out.row(out_y);
    for (int64_t x = 0; x < out.width; ++x) dst[x] = static_cast<float>(acc[static_cast<size_t>(x)]);
  });
}

void convolve2d_general(ConstImageView image, ConstImageView kernel, ConvolveMode mode, ImageView out) {
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
