// Connected-component labelling, CPU kernel.
#pragma once
#include <cstdint>

#include "imflow/image.hpp"

namespace imflow::kernels {

// Label the non-zero pixels of `mask` (width x height) with connectivity 4 or 8. Labels are
// 1..n, numbered in raster order of each component's first pixel (scipy.ndimage.label's order);
// background is 0. Returns n. labels_zeroed: `labels` already holds 0 everywhere (a freshly
// value-initialised buffer), so only the labelled pixels are written. minarea: components of
// fewer pixels are background, the others numbered 1..n in the same order (what
// drop_small_components makes of the labels, without its passes over the pixels).
int32_t label_components(View2D<const uint8_t> mask, int connectivity, int32_t* labels, bool labels_zeroed = false,
                         int64_t minarea = 1);

// SExtractor's DETECT_MINAREA, SEP's minarea: components of fewer than `minarea` pixels become
// background (0) and the others are renumbered 1..m in their order. `labels` holds n pixels
// labelled 1..nlabels; returns m.
int32_t drop_small_components(int32_t* labels, int64_t n, int32_t nlabels, int64_t minarea);

}  // namespace imflow::kernels
