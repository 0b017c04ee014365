// Dual-image mode on the device (input.detect): the detection image sits in gpu.detection, the
// measured image in gpu.image; the measured image gets its own background (and its own weight
// map's noise), and measure a second pass over it whose fluxes and peaks replace the detection
// pass's (as on the CPU).
#pragma once
#include "cuda/background_mesh.hpp"
#include "cuda/gpu_context.hpp"

namespace imflow::cuda {

// One slot's buffers for the measured image (grow-only), created by its first dual-image item.
struct MeasuredImageState {
  MeshBackgroundState maps;  // its mesh background, valid when has_maps
  bool has_maps = false;
  bool has_background = false;
  DeviceBuffer<DeviceResults> results;  // its background's median, std, valid, kept, meshes_dropped
  PinnedBuffer<DeviceResults> results_host;
  CatalogAccumulators accumulators;  // measure's pass over the measured image
  DeviceBuffer<DeviceSource> rows;   // ... and its rows, merged into the catalog
  // The detection image as uploaded, kept when convolve filters gpu.detection (detection_filtered):
  // positions, shapes, deblend's measurement values and the Kron radii are taken from it, as the CPU's.
  DeviceBuffer<float> detection_as_read;
  bool detection_filtered = false;
  // input.weight: maps.rms_map from the measured image's weight map (cuda::measured_weight_noise).
  std::shared_ptr<WeightNoiseState> weight_noise;
  bool has_weight_noise = false;
  bool weight_rescale = false;
  // deblend's clean_style sextractor: a survivor's shapes come from its own pixels (those still
  // detected in gpu.mask, kernels::DeblendInput::detected), its sums from all of them.
  bool merged_shapes = false;
  DeviceBuffer<int32_t> own_labels;
};

// Whether measure makes two passes, the fluxes' over gpu.image and the shapes' over another image
// or other labels: in dual-image mode, after a detection filter that subtracted the background,
// and after SExtractor's CLEAN (merged_shapes).
inline bool two_pass_measure(const GpuContext& gpu) {
  return gpu.dual_image || gpu.filtered_shapes || (gpu.measured && gpu.measured->merged_shapes);
}

// Dual-image mode: the detection image before any filter.
inline const float* unfiltered_detection(const GpuContext& gpu) {
  return gpu.measured->detection_filtered ? gpu.measured->detection_as_read.data() : gpu.detection.data();
}

// convolve, before gpu.detection takes its filtered image: in dual-image mode the first filter
// moves the image as uploaded into detection_as_read (gpu.detection is then an empty buffer).
inline void keep_detection_as_read(GpuContext& gpu) {
  if (!gpu.dual_image || gpu.measured->detection_filtered) return;
  swap(gpu.detection, gpu.measured->detection_as_read);
  gpu.measured->detection_filtered = true;
}

// What the measurements (measure, the photometry) subtract and take their noise from: the mesh
// maps (map and rms_map), or the global level and std in *stats, or nothing. The detection
// image's background, or in dual-image mode the measured image's own.
struct MeasurementBackground {
  const float* map = nullptr;
  const float* rms_map = nullptr;
  const DeviceResults* stats = nullptr;  // device results holding median and std
  bool level = false;                    // subtract stats->median (a global background)
  bool any = false;                      // a background step ran
  bool std_noise = false;                // the noise is stats->std (level, or measure's noise: global)
  bool weight_gain = false;              // rms_map is a weight map's and input.weight.gain: WEIGHT_GAIN against stats->std
};

// measure's noise: global (SExtractor's WEIGHT_TYPE NONE): the mesh map is still subtracted, the
// noise is the global RMS.
inline MeasurementBackground with_noise_of(const GpuContext& gpu, MeasurementBackground b) {
  if (gpu.global_noise && b.any) b.rms_map = nullptr;
  b.std_noise = b.any && b.rms_map == nullptr;
  return b;
}

// `b`'s noise with nothing to subtract: for gpu.detection when a convolve subtracted the background.
inline MeasurementBackground noise_only(MeasurementBackground b) {
  b.map = nullptr;
  b.level = false;
  return b;
}

// The detection image's background (the only one outside dual-image mode).
inline MeasurementBackground detection_background(const GpuContext& gpu) {
  MeasurementBackground b;
  b.map = gpu.has_background_maps ? gpu.mesh_background->back_map.data() : nullptr;
  b.rms_map = gpu.has_background_maps ? gpu.mesh_background->rms_map.data() : nullptr;
  b.stats = gpu.results.data();
  b.level = gpu.has_background && !gpu.has_background_maps;
  b.any = gpu.has_background;
  b.weight_gain = gpu.weight_gain && gpu.has_weight_noise;
  return with_noise_of(gpu, b);
}

inline MeasurementBackground measurement_background(const GpuContext& gpu) {
  if (!gpu.dual_image) return detection_background(gpu);
  const MeasuredImageState& m = *gpu.measured;
  MeasurementBackground b;
  b.map = m.has_maps ? m.maps.back_map.data() : nullptr;
  b.rms_map = m.has_maps ? m.maps.rms_map.data() : nullptr;
  b.stats = m.results.data();
  b.level = m.has_background && !m.has_maps;
  b.any = m.has_background;
  b.weight_gain = gpu.weight_gain && m.has_weight_noise;
  return with_noise_of(gpu, b);
}

// The host copy of the stats measurement_background points at (after enqueue_download).
inline const DeviceResults& measurement_stats_host(const GpuContext& gpu) {
  return gpu.dual_image ? *gpu.measured->results_host.data() : *gpu.results_host.data();
}

// The background step on a dual-image item: the measured image's own background with the same
// method (mesh `params`, or kappa-sigma when null), as the CPU's second estimate.
void measured_image_background(GpuContext& gpu, const kernels::MeshParams* mesh, double kappa, int max_iters);

}  // namespace imflow::cuda
