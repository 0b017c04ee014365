// Threshold segmentation against per-pixel background (and RMS) maps on the CPU.
#include <cmath>

#include "imflow/kernels/segment_map.hpp"

namespace imflow::kernels {

int64_t threshold_mask_local(ConstImageView image, const float* back, const float* rms, double nsigma,
                             double global_rms, uint8_t* mask) {
  int64_t count = 0;
  const double global_threshold = nsigma * global_rms;
  for (int64_t i = 0; i < image.size(); ++i) {
    const float value = image.data[i];
    const double threshold = rms != nullptr ? nsigma * static_cast<double>(rms[i]) : global_threshold;
    const bool on = std::isfinite(value) && static_cast<double>(value) - static_cast<double>(back[i]) > threshold;
    mask[i] = on ? 1 : 0;
    count += on;
  }
  return count;
}

}  // namespace imflow::kernels
