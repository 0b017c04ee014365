// 2-D zero-padded convolution on the device (twin of kernels::convolve2d).
#pragma once
#include "cuda/gpu_context.hpp"
#include "imflow/kernels/convolve.hpp"
#include "imflow/kernels/sep_filter.hpp"

namespace imflow::cuda {

// Convolve the detection image (gpu.detection when one was made or uploaded, else gpu.image, as
// the CPU step's item.detection_image()) with the kw x kh row-major `host_kernel` (copied to the
// device once per slot and cached by content). Float accumulation: agrees with the float64 CPU kernel to about
// 1e-5 of the output's largest magnitude. to_detection: the result goes to gpu.detection (same
// mode only) and segmentation uses it; otherwise it replaces gpu.image (and its size in full
// mode). A rank-1 kernel (Gaussians) runs the fused separable kernel unless allow_separable is
// false (benchmarks and tests of the general path). subtract_background: the detection image's
// background (the mesh map or the global median) is subtracted before filtering, as the CPU step
// does after the background step.
void convolve(GpuContext& gpu, const float* host_kernel, int kw, int kh, kernels::ConvolveMode mode,
              bool to_detection, bool allow_separable = true, bool subtract_background = false);

// `convolve` with `arithmetic: sep` (twin of the CPU step's kernels::sep_convolve): SEP's filter
// of the detection image (gpu.detection when one was made, else gpu.image), bit-identical to the
// CPU's; to_detection: into gpu.detection, otherwise it replaces gpu.image; subtract_background as
// `convolve`'s.
void convolve_sep(GpuContext& gpu, const kernels::SepFilterKernel& kernel, bool to_detection,
                  bool subtract_background = false);

}  // namespace imflow::cuda
