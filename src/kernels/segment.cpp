// Threshold segmentation on the CPU.
#include "imflow/kernels/segment.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace imflow::kernels {

float float_threshold_below(double threshold) {
  constexpr float kMax = std::numeric_limits<float>::max();
  if (std::isnan(threshold)) return std::numeric_limits<float>::quiet_NaN();
  if (threshold >= static_cast<double>(kMax)) return std::isinf(threshold) ? static_cast<float>(threshold) : kMax;
  if (threshold < -static_cast<double>(kMax)) return -std::numeric_limits<float>::infinity();
  float below = static_cast<float>(threshold);  // the nearest float, which may lie above
  if (static_cast<double>(below) > threshold) below = std::nextafter(below, -std::numeric_limits<float>::infinity());
  return below;
}

int64_t threshold_mask(ConstImageView image, double threshold, uint8_t* mask) {
  // (double)value > threshold exactly when value > `below`, the largest float at or under the
  // threshold: the comparison stays in float32 and the loop is vectorised (no branch).
  const float below = float_threshold_below(threshold);
  constexpr float kInfinity = std::numeric_limits<float>::infinity();
  const float* const pixels = image.data;
  const int64_t n = image.size();
  constexpr int64_t kBlock = 1 << 16;  // counted in 32 bits within a block: narrower SIMD lanes
  int64_t count = 0;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = std::min(n, start + kBlock);
    uint32_t block_count = 0;
    for (int64_t i = start; i < end; ++i) {
      const float value = pixels[i];
      const uint8_t on = static_cast<uint8_t>((value > below) & (value < kInfinity));  // NaN: both false
      mask[i] = on;
      block_count += on;
    }
    count += block_count;
  }
  return count;
}

}  // namespace imflow::kernels
