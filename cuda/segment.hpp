// Threshold segmentation on the device (twin of kernels::threshold_mask and threshold_mask_local).
#pragma once
#include "cuda/gpu_context.hpp"

namespace imflow::cuda {

// What segment's threshold is relative to (the step's relative_to).
enum class Threshold { background, zero, rms_map };

// Global background: threshold = (zero ? 0 : median) + nsigma * std, from the device results;
// mask = isfinite(p) && p > threshold. After the mesh background (has_background_maps):
// background: p - back(x,y) > nsigma * globalrms; rms_map: p - back(x,y) > nsigma * rms(x,y);
// zero: p > nsigma * globalrms; results.threshold = nsigma * globalrms for the first two.
// On the detection image when there is one, else the image. Writes results.threshold and
// results.mask_pixels. rms_map without the mesh maps throws std::runtime_error.
// detection_subtracted (a convolve subtracted the background before filtering): no background is
// subtracted, background compares as zero, rms_map as p > nsigma * rms(x,y).
void segment(GpuContext& gpu, double nsigma, Threshold relative_to, bool detection_subtracted = false);

// The segment step's form: the reference and detection_subtracted from the step's SegmentThreshold
// (rms_map, else background where it subtracts one or a convolve did, else zero).
void segment(GpuContext& gpu, const SegmentThreshold& how);

// The global-background form: relative_to_zero ? Threshold::zero : Threshold::background.
void segment(GpuContext& gpu, double nsigma, bool relative_to_zero);

}  // namespace imflow::cuda
