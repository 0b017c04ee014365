// Kappa-sigma clipped background statistics on the device (twin of kernels::kappa_sigma_clip).
#pragma once
#include "cuda/gpu_context.hpp"

namespace imflow::cuda {

// Median, std, iterations, kept and valid of gpu.image into the device results, with the
// semantics of kernels::kappa_sigma_clip (same median exactly, std to ~1e-15 relative, same
// iterations). One cooperative kernel runs every iteration; the host never waits.
void background(GpuContext& gpu, double kappa, int max_iters);

}  // namespace imflow::cuda
