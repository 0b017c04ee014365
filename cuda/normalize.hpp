// GPU `normalize`: min-max or z-score over the finite pixels of gpu.image (statistics in double,
// NaN/Inf untouched or, with zero_nonfinite, set to 0 and counted in gpu.results.zeroed_pixels; a
// constant image becomes zeros), the mapping into gpu.results (norm_*).
#pragma once
#include "cuda/gpu_context.hpp"

namespace imflow::cuda {

// Enqueue on gpu.stream; sets gpu.has_normalization and gpu.image_modified. Never synchronizes.
void normalize(GpuContext& gpu, bool zscore, bool zero_nonfinite = false);

}  // namespace imflow::cuda
