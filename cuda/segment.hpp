// Threshold segmentation on the device (twin of kernels::threshold_mask).
#pragma once
#include "cuda/gpu_context.hpp"

namespace imflow::cuda {

// threshold = (relative_to_zero ? 0 : median) + nsigma * std, computed on the device from the
// background results (background must have been enqueued); mask = isfinite(p) && p > threshold
// on the detection image when there is one, else the image. Writes results.threshold and
// results.mask_pixels.
void segment(GpuContext& gpu, double nsigma, bool relative_to_zero);

}  // namespace imflow::cuda
