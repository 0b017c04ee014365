// 2-D convolution with zero padding (scipy.signal.convolve2d, boundary='fill'), CPU kernel,
// and the Gaussian kernels the convolve step offers.
#pragma once
#include <cstdint>
#include <vector>

#include "imflow/image.hpp"

namespace imflow::kernels {

enum class ConvolveMode { same, full };

// Output size: `full` is (W+kw-1) x (H+kh-1); `same` is W x H, centred on the full result
// with offset ((kw-1)/2, (kh-1)/2) as SciPy does. Accumulates in float64. NaN propagates.
// Uses the separable path when the kernel is rank-1 (separable_factors), else the general one.
void convolve2d(ConstImageView image, ConstImageView kernel, ConvolveMode mode, ImageView out);

// The general direct 2-D convolution (any kernel), same contract as convolve2d.
void convolve2d_general(ConstImageView image, ConstImageView kernel, ConvolveMode mode, ImageView out);

// Rank-1 test: true when kernel(i, j) == col[j] * row[i] within `tolerance` x max|kernel| for every
// entry (row and column through the largest-magnitude entry). Fills row (kw) and col (kh) then.
bool separable_factors(ConstImageView kernel, std::vector<float>& row, std::vector<float>& col,
                       double tolerance = 1e-6);

// Two-pass (rows, then columns) float64 convolution by outer(col, row); same contract as convolve2d.
void convolve2d_separable(ConstImageView image, const float* row, int64_t kw, const float* col, int64_t kh,
                          ConvolveMode mode, ImageView out);

int64_t convolved_width(int64_t image_width, int64_t kernel_width, ConvolveMode mode);
int64_t convolved_height(int64_t image_height, int64_t kernel_height, ConvolveMode mode);

// size x size Gaussian, offsets -(size/2)..size/2 pixels, exp(-r^2 / (2 sigma^2)), sum 1.
void gaussian_kernel(int size, double sigma, ImageBuffer& out);

// The seed lesson's 15x15 kernel: coordinates linspace(-2, 2, 15), sigma 1, not normalised.
void lesson_gaussian_kernel(ImageBuffer& out);

}  // namespace imflow::kernels
