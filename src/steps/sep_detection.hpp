// The detection an item's `segment` made, in SEP's float32 terms (kernels::SepDetection): shared
// by `segment` (compare: float32) and `deblend`, so both use the same values and thresholds.
#pragma once
#include <stdexcept>

#include "imflow/kernels/segment_sep.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

// From the background step's results: the mesh background's map (relative_to: background or
// rms_map) or the global median (relative_to: background) as the background, none with
// relative_to: zero; the RMS map (relative_to: rms_map: the map, or the CPU grid's rows) or the
// global rms / std as the noise.
inline kernels::SepDetection sep_detection_of(const WorkItem& item, const SegmentThreshold& threshold) {
  if (!item.background) throw std::runtime_error("the detection needs the background step's results");
  const BackgroundStats& stats = *item.background;
  const bool maps = !item.background_map.empty();
  kernels::SepDetection d;
  d.nsigma = static_cast<float>(threshold.nsigma);
  d.rms_level = static_cast<float>(stats.std);
  if (threshold.subtract_background) {
    if (maps) {
      d.back = item.background_map.data();
    } else {
      d.back_level = static_cast<float>(stats.median);
    }
  }
  if (threshold.rms_map) {
    if (!item.rms_map.empty()) {
      d.rms = item.rms_map.data();
    } else if (item.mesh_grid) {
      d.rms_grid = item.mesh_grid.get();
    } else {
      throw std::runtime_error("relative_to: rms_map found no RMS map or mesh grid");
    }
  }
  return d;
}

}  // namespace imflow
