// Threshold segmentation, CPU kernel.
#pragma once
#include <cstdint>

#include "imflow/image.hpp"

namespace imflow::kernels {

// mask = 1 where the pixel is finite and (double)pixel > threshold (strict), else 0.
// Returns the number of pixels set.
int64_t threshold_mask(ConstImageView image, double threshold, uint8_t* mask);

// The largest float F with (double)F <= threshold (-infinity below the finite floats, FLT_MAX
// above them, NaN for NaN), so that for every float v: ((double)v > threshold) == (v > F).
float float_threshold_below(double threshold);

}  // namespace imflow::kernels
