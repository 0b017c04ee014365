// Interleaved samples (PNG pixels, NIfTI RGB voxels) to float gray: the first channel for gray or
// gray+alpha, ITU-R BT.601 luma Y = 0.299 R + 0.587 G + 0.114 B for colour (alpha ignored).
#pragma once
#include <cstdint>

namespace imflow::detail {

// Returns true when a colour image had pixels whose channels differ (worth a warning); the luma is
// taken in double, so gray pixels (R = G = B) keep their exact value.
template <typename T>
bool interleaved_to_gray(const T* samples, int channels, int64_t count, float* out) {
  if (channels == 1) {  // contiguous: the loop vectorizes
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(samples[i]);
    return false;
  }
  if (channels == 2) {
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(samples[2 * i]);
    return false;
  }
  bool coloured = false;
  for (int64_t i = 0; i < count; ++i) {
    const T* p = samples + i * channels;
    coloured = coloured || p[0] != p[1] || p[1] != p[2];
    out[i] = static_cast<float>(0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]);
  }
  return coloured;
}

}  // namespace imflow::detail
