// Helpers of the aperture photometry definitions (aperture_*.hpp, host and device): a pixel's
// variance from the image's noise description, in SEP's float arithmetic, and neighbours' pixels.
#pragma once
#include <cmath>
#include <cstdint>

#include "imflow/kernels/aperture.hpp"

namespace imflow::kernels::aperture_detail {

// SEP stores a pixel's variance as a float: an err pixel is squared in float, a single err value
// squared in double and then rounded to float.
class PixelNoise {
 public:
  IMFLOW_HOST_DEVICE explicit PixelNoise(const ApertureImage& image)
      : array_(image.noise_kind != NoiseKind::none ? image.noise : nullptr),
        squared_(image.noise_kind == NoiseKind::stddev),
        value_(image.noise_kind == NoiseKind::none
                   ? 0.0f
                   : static_cast<float>(squared_ ? image.noise_value * image.noise_value : image.noise_value)) {}

  // `at` < 0: a pixel counted as 0 (read_pixel), whose variance is 0 with a per-pixel noise map
  // (SExtractor with a weight field: photom.c, winpos.c, growth.c) and the one value otherwise.
  IMFLOW_HOST_DEVICE float variance(int64_t at) const {
    if (array_ == nullptr) return value_;
    if (at < 0) return 0.0f;
    const float v = array_[at];
    return squared_ ? v * v : v;
  }

 private:
  const float* array_;
  bool squared_;
  float value_;
};

// Whether pixel `at` is another object's (ApertureImage::neighbours and detected).
IMFLOW_HOST_DEVICE inline bool other_object(const ApertureImage& image, int64_t at) {
  return blanked_pixel(image.neighbours, image.detected, image.neighbour_id, at);
}

// The pixel a sum reads for (ix, iy): itself, or for another object's pixel the one symmetric
// about the centre, at SExtractor's (int)(2 x + 0.49999 - ix) (C's truncation: a mirror up to a
// pixel before the first column is column 0); when there is none (outside the image, another
// object's or masked) the pixel counts as 0 with noise_at -1 (PixelNoise::variance).
struct ReadPixel {
  float value;
  int64_t noise_at;
};
IMFLOW_HOST_DEVICE inline ReadPixel read_pixel(const ApertureImage& image, int64_t ix, int64_t iy, int64_t at) {
  if (!other_object(image, at)) return {image.data.data[at], at};
  const double mx = 2.0 * image.mirror_x + 0.49999 - static_cast<double>(ix);
  const double my = 2.0 * image.mirror_y + 0.49999 - static_cast<double>(iy);
  if (!(mx > -1.0 && my > -1.0 && mx < static_cast<double>(image.data.width) && my < static_cast<double>(image.data.height)))
    return {0.0f, -1};
  const auto sx = static_cast<int64_t>(mx), sy = static_cast<int64_t>(my);
  const int64_t sat = sy * image.data.width + sx;
  if (other_object(image, sat) || image.masked(sat)) return {0.0f, -1};
  return {image.data.data[sat], sat};
}

}  // namespace imflow::kernels::aperture_detail
