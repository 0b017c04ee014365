// SEP 1.4.1's detection filters (its convolve.c), CPU kernel: the kernel normalised as sep.extract
// normalises it, the line convolution ('conv') and the matched filter ('matched'), float32 as SEP.
#pragma once
#include <cstdint>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

// A filter kernel as sep.extract uses it: every entry divided by the float32 sum of |entries|.
struct SepFilterKernel {
  std::vector<float> values;  // height rows of width entries
  int64_t width = 0, height = 0;
};
// Throws std::invalid_argument for an empty kernel or one whose entries sum to 0 in magnitude.
SepFilterKernel sep_filter_kernel(ConstImageView kernel);

// The kernel rows that fall inside the image for output row y (SEP cuts them at the top and
// bottom): image rows y0.. and kernel rows first.., `rows` of them. Shared with the CUDA twin.
struct SepFilterWindow {
  int64_t y0, first, rows;
};
IMFLOW_HOST_DEVICE inline SepFilterWindow sep_filter_window(int64_t y, int64_t image_height, int64_t kernel_height) {
  int64_t y0 = y - kernel_height / 2, rows = kernel_height, first = 0;
  if (y0 + rows > image_height) rows = image_height - y0;
  if (y0 < 0) {
    rows += y0;
    first = -y0;
    y0 = 0;
  }
  return {y0, first, rows};
}

// What the noise array of the matched filter holds (sep.extract's err= or var=).
enum class SepNoiseKind { stddev, variance };

// SEP's convolve(): out(x, y) = sum over the kernel of k(i, j) x image(x + i - width/2,
// y + j - height/2), a correlation (the kernel is not flipped) with the entries outside the image
// left out (zero padding), accumulated in float32 kernel entry by kernel entry as SEP does, so the
// sums are SEP's bit for bit. NaN pixels spread to their neighbours' sums. `out` is laid out like
// the image (may not alias it).
void sep_convolve(ConstImageView image, const SepFilterKernel& kernel, float* out);

// SEP's matched_filter(): out = sum k d / v / sqrt(sum k^2 / v) over the same window, v the
// pixel's variance (noise^2 in float32 for stddev, noise for variance); pixels with v == 0 are left
// out (0/0 gives NaN where all are). The numerator and the sum of k^2/v are float32 sums, the
// quotient double, as in SEP. `noise` is laid out like the image.
void sep_matched_filter(ConstImageView image, const float* noise, SepNoiseKind kind, const SepFilterKernel& kernel,
                        float* out);

}  // namespace imflow::kernels
