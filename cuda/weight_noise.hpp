// A weight map's noise on the device (twin of weight_rms_map, steps/weight_noise.hpp):
// SExtractor's rescaling of the map to the image's measured noise, then the RMS map.
#pragma once
#include <vector>

#include "cuda/gpu_context.hpp"
#include "imflow/kernels/background_mesh.hpp"

namespace imflow::cuda {

// One slot's buffers for one weight map (grow-only), created by its first weighted item.
struct WeightNoiseState {
  PinnedBuffer<float> staging;      // the item's variances on their way to the device
  DeviceBuffer<float> variance;     // width x height, +inf at bad pixels
  DeviceBuffer<float> grid;         // the variance grid: raw back, raw sigma, filled, filtered (6 x meshes)
  DeviceBuffer<float> ratios;       // per mesh: image sigma / sqrt(variance mode), then sorted
  DeviceBuffer<unsigned char> sort_temp;
};

// After cuda::background_mesh on this item: replace gpu.mesh_background->rms_map with
// sqrt(variance x factor^2), where factor is SExtractor's rescaling (kernels::weight_scale: per
// mesh the weighted backstat/backhisto/backguess of the map beside the image background_mesh
// read, filled and filtered as its grid, the median ratio of the image's noise to the map's)
// when `rescale`, else 1. `variance`: the item's weight_variance (its size the image's). The
// factor and the meshes behind it go to results.weight_scale / weight_meshes (collect_results
// reports them). Copies `variance` before returning; never synchronizes.
// In dual-image mode this is the detection image's map (input.detect.weight).
void weight_noise(GpuContext& gpu, const kernels::MeshParams& params, const std::vector<float>& variance, bool rescale);

// Dual-image mode, after cuda::measured_image_background with a mesh: the same for the measured
// image's map (input.weight) against its own background, into gpu.measured's rms_map and results
// (collect_results reports them as the item's weight_scale).
void measured_weight_noise(GpuContext& gpu, const kernels::MeshParams& params, const std::vector<float>& variance,
                           bool rescale);

}  // namespace imflow::cuda
