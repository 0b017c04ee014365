// SExtractor's saturation test (FLAGS 4, analyse.c: peak + bkg >= satur_level), one function for
// the CPU and the GPU: with a mesh background the source's peak less the background (`peak`,
// FLUX_MAX) plus the background at its centroid rounded to a pixel; with the global one (the peak
// as read) nothing added.
#pragma once
#include <stdint.h>

#include "imflow/kernels/host_device.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

// Whether `s` reaches `level`: its peak (+ background_map at its centroid rounded as C's
// (int)(x + 0.5), when not null; `width` x `height` pixels) at or above it.
IMFLOW_HOST_DEVICE inline bool reaches_saturation(const Source& s, double level, const float* background_map,
                                                  int64_t width, int64_t height) {
  double peak = s.peak;
  if (background_map != nullptr) {
    const int64_t x = static_cast<int64_t>(s.x + 0.5), y = static_cast<int64_t>(s.y + 0.5);
    const int64_t cx = x < 0 ? 0 : (x >= width ? width - 1 : x), cy = y < 0 ? 0 : (y >= height ? height - 1 : y);
    peak += background_map[cy * width + cx];
  }
  return s.npix > 0 && peak >= level;
}

}  // namespace imflow::kernels
