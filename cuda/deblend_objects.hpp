// The `deblend` step on the device: SEP's detection values rebuilt from segment's arithmetic,
// cuda::deblend on the label map `label` made, and the objects' label map and records left in
// the slot for cuda::measure and collect_results.
#pragma once
#include "cuda/deblend.hpp"
#include "cuda/gpu_context.hpp"
#include "imflow/kernels/deblend.hpp"

namespace imflow::cuda {

// One slot's deblending state, created by its first deblend and kept (buffers only grow).
struct DeblendState {
  DeblendWorkspace workspace;
  DeviceBuffer<float> values, measurement, thresholds;  // SEP's detection values, the unfiltered ones, per-pixel thresholds
  DeviceBuffer<int32_t> labels_out;                     // the objects' map, swapped with gpu.labels
  DeviceBuffer<double> threshold;                       // the one threshold, float(nsigma) x float(std)
};

// Enqueue the deblending of gpu.labels (8-connected segments of the pixels segment_sep
// selected with `how`): gpu.labels becomes the objects' map (1..m in SEP's catalog order),
// results.nlabels m, gpu.has_deblend set. Synchronizes the stream once (cuda::deblend sizes its
// buffers from the census).
void deblend_objects(GpuContext& gpu, const SegmentThreshold& how, const kernels::DeblendParams& params);

}  // namespace imflow::cuda
