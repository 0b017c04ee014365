// Kappa-sigma clipped background statistics on the device (twin of kernels::kappa_sigma_clip).
#pragma once
#include "cuda/gpu_context.hpp"

namespace imflow::cuda {

// Median, std, iterations, kept and valid of the detection image (gpu.detection after a
// convolve, else gpu.image) into the device results, with the semantics of
// kernels::kappa_sigma_clip (same median exactly, std to ~1e-15 relative, same iterations). The
// keys are sorted once (CUB radix sort) and summed by chunks; one block then runs every
// iteration from the chunk sums; the host never waits.
void background(GpuContext& gpu, double kappa, int max_iters);

// The same of the gpu.size() pixels at `source` into `results`, leaving the context's flags
// alone: the measured image's own background in dual-image mode (cuda/measured_image.hpp).
void background_of(GpuContext& gpu, double kappa, int max_iters, const float* source, DeviceResults* results);

}  // namespace imflow::cuda
