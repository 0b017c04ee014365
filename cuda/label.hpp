// Connected-component labelling on the device (twin of kernels::label_components).
#pragma once
#include "cuda/gpu_context.hpp"

namespace imflow::cuda {

// Label gpu.mask (segment must have been enqueued) with connectivity 4 or 8 into gpu.labels:
// 1..n in raster order of each component's first pixel (SciPy's numbering), 0 background;
// n goes to results.nlabels. Components of fewer than `minarea` pixels are left 0 and the others
// numbered without them (kernels::drop_small_components). Images of 2^31 pixels or more throw
// std::length_error.
void label(GpuContext& gpu, int connectivity, int64_t minarea = 1);

}  // namespace imflow::cuda
