// SEP's detection arithmetic, CPU kernel: the value sep.extract thresholds, data - bkg in float32,
// against its threshold, the float product thresh x err, per pixel or one value. `segment` with
// compare: float32 thresholds with it and `deblend` feeds the same values and thresholds to the
// deblending, so the segments it splits are exactly those sep.extract finds.
#pragma once
#include <cstdint>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/kernels/background_mesh.hpp"

namespace imflow::kernels {

// value = pixel - background (the map `back`, or `back_level`; 0 for none), a float32
// subtraction; threshold = nsigma x noise, a float32 product, with the noise the RMS map `rms`,
// or the rows of `rms_grid` (the CPU mesh background's grid, evaluated row by row), or the one
// value `rms_level`. Maps are laid out like the image.
struct SepDetection {
  const float* back = nullptr;
  float back_level = 0.0f;
  const float* rms = nullptr;
  const MeshGrid* rms_grid = nullptr;
  float rms_level = 0.0f;
  float nsigma = 0.0f;

  bool per_pixel() const { return rms != nullptr || rms_grid != nullptr; }
  // The one threshold when !per_pixel() (SEP's thresh x err for a scalar err).
  float threshold() const { return nsigma * rms_level; }
};

// mask = 1 where the pixel is finite and value > threshold (strict, both float32), else 0.
// Returns the pixels set.
int64_t sep_threshold_mask(ConstImageView image, const SepDetection& detection, uint8_t* mask);

// Every pixel's value (NaN pixels stay NaN) into `values` and, when per_pixel(), its threshold
// into `thresholds` (both laid out like the image); the same numbers sep_threshold_mask compares.
void sep_detection_values(ConstImageView image, const SepDetection& detection, float* values, float* thresholds);

// SEP's tnpix: per object of `labels` (1..thresh.size(), 0 elsewhere), its pixels whose
// unfiltered value exceeds the object's thresh (float32 comparison, as SEP's analyse).
std::vector<int64_t> sep_count_above(ConstImageView values, const int32_t* labels, const std::vector<float>& thresh);

// SEP's thresh of the objects of a given segmentation map (sep.extract(..., segmentation_map=map)):
// per label 1..nlabels the mean of its pixels' thresholds (a double sum in raster order, then
// float32), or `threshold` for every label when `thresholds` is nullptr.
std::vector<float> sep_mean_thresholds(const int32_t* labels, int64_t npixels, int32_t nlabels, const float* thresholds,
                                       float threshold);

}  // namespace imflow::kernels
