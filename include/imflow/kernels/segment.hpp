// Threshold segmentation, CPU kernel.
#pragma once
#include <cstdint>

#include "imflow/image.hpp"

namespace imflow::kernels {

// mask = 1 where the pixel is finite and (double)pixel > threshold (strict), else 0.
// Returns the number of pixels set.
int64_t threshold_mask(ConstImageView image, double threshold, uint8_t* mask);

}  // namespace imflow::kernels
