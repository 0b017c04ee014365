// 2-D convolution with zero padding (scipy.signal.convolve2d, boundary='fill'), CPU kernel,
// and the Gaussian kernels the convolve step offers.
#pragma once
#include <cstdint>

#include "imflow/image.hpp"

namespace imflow::kernels {

enum class ConvolveMode { same, full };

// Output size: `full` is (W+kw-1) x (H+kh-1); `same` is W x H, centred on the full result
// with offset ((kw-1)/2, (kh-1)/2) as SciPy does. Accumulates in float64. NaN propagates.
void convolve2d(ConstImageView image, ConstImageView kernel, ConvolveMode mode, ImageView out);

int64_t convolved_width(int64_t image_width, int64_t kernel_width, ConvolveMode mode);
int64_t convolved_height(int64_t image_height, int64_t kernel_height, ConvolveMode mode);

// size x size Gaussian, offsets -(size/2)..size/2 pixels, exp(-r^2 / (2 sigma^2)), sum 1.
void gaussian_kernel(int size, double sigma, ImageBuffer& out);

// The seed lesson's 15x15 kernel: coordinates linspace(-2, 2, 15), sigma 1, not normalised.
void lesson_gaussian_kernel(ImageBuffer& out);

}  // namespace imflow::kernels
