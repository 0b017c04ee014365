// Connected-component labelling, CPU kernel.
#pragma once
#include <cstdint>

#include "imflow/image.hpp"

namespace imflow::kernels {

// Label the non-zero pixels of `mask` (width x height) with connectivity 4 or 8. Labels are
// 1..n, numbered in raster order of each component's first pixel (scipy.ndimage.label's order);
// background is 0. Returns n. labels_zeroed: `labels` already holds 0 everywhere (a freshly
// value-initialised buffer), so only the labelled pixels are written.
int32_t label_components(View2D<const uint8_t> mask, int connectivity, int32_t* labels, bool labels_zeroed = false);

}  // namespace imflow::kernels
