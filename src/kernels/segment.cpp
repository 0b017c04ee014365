// Threshold segmentation on the CPU.
#include "imflow/kernels/segment.hpp"

#include <cmath>

namespace imflow::kernels {

int64_t threshold_mask(ConstImageView image, double threshold, uint8_t* mask) {
  int64_t count = 0;
  for (int64_t i = 0; i < image.size(); ++i) {
    const float value = image.data[i];
    const bool on = std::isfinite(value) && static_cast<double>(value) > threshold;
    mask[i] = on ? 1 : 0;
    count += on;
  }
  return count;
}

}  // namespace imflow::kernels
