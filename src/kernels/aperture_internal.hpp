// Helpers shared by the aperture photometry kernels (src/kernels/aperture_*.cpp): a pixel's
// variance from the image's noise description, in SEP's float arithmetic.
#pragma once
#include <cstdint>

#include "imflow/kernels/aperture.hpp"

namespace imflow::kernels {

// SEP stores a pixel's variance as a float: an err pixel is squared in float, a single err value
// squared in double and then rounded to float.
class PixelNoise {
 public:
  explicit PixelNoise(const ApertureImage& image)
      : array_(image.noise_kind != NoiseKind::none ? image.noise : nullptr),
        squared_(image.noise_kind == NoiseKind::stddev),
        value_(image.noise_kind == NoiseKind::none
                   ? 0.0f
                   : static_cast<float>(squared_ ? image.noise_value * image.noise_value : image.noise_value)) {}

  float variance(int64_t at) const {
    if (array_ == nullptr) return value_;
    const float v = array_[at];
    return squared_ ? v * v : v;
  }

 private:
  const float* array_;
  bool squared_;
  float value_;
};

}  // namespace imflow::kernels
