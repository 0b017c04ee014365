// Batched GPU `normalize` for the batch engine: min-max or z-score of each of `count` contiguous
// images (one block per image), with exactly the semantics of cuda/normalize.hpp (finite pixels
// only, NaN/Inf kept or with zero_nonfinite set to 0, a constant image becomes zeros, the mapping
// composed into results[b].norm_*).
#pragma once
#include <cuda_runtime_api.h>

#include "cuda/gpu_context.hpp"

namespace imflow::cuda {

// Enqueue on `stream`; image b is images[b * pixels, (b + 1) * pixels). Never synchronizes.
void normalize_batched(float* images, long long pixels, int count, DeviceResults* results, bool zscore,
                       bool zero_nonfinite, cudaStream_t stream);

}  // namespace imflow::cuda
