// SEP's detection arithmetic on the device (twin of kernels::sep_threshold_mask and
// kernels::sep_detection_values): value = pixel - background in float32 against the float32
// product nsigma x noise, so that `segment` (compare: float32) and `deblend` on the GPU see
// exactly the numbers they see on the CPU.
#pragma once
#include "cuda/gpu_context.hpp"

namespace imflow::cuda {

// The mask of segment's compare: float32 on gpu.detection (when a GPU convolve made one) or
// gpu.image: isfinite(p) && p - back > nsigma x noise, with back the mesh map (when the mesh
// background ran and how.subtract_background), float(median) (no maps), or none; noise the RMS
// map (how.rms_map) or float(globalrms / std). Writes results.threshold as the CPU step reports it
// ((maps or relative_to zero ? 0 : median) + nsigma x std) and results.mask_pixels. how.rms_map
// without the mesh maps throws std::runtime_error.
void segment_sep(GpuContext& gpu, const SegmentThreshold& how);

// The same numbers for deblend: every pixel's value of `source` (width x height, device) into
// `values`; with how.rms_map its threshold into `thresholds` (when not null), and
// the one threshold float(nsigma) x float(std) as a double into *threshold (device).
void sep_detection_values(GpuContext& gpu, const SegmentThreshold& how, const float* source, float* values,
                          float* thresholds, double* threshold);

}  // namespace imflow::cuda
