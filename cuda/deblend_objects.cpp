// The `deblend` step's device launcher (cuda/deblend_objects.hpp).
#include "cuda/deblend_objects.hpp"

#include <stdexcept>

#include "cuda/measured_image.hpp"
#include "cuda/sep_detection.hpp"

namespace imflow::cuda {

void deblend_objects(GpuContext& gpu, const SegmentThreshold& how, const kernels::DeblendParams& params) {
  if (!gpu.has_labels) throw std::logic_error("cuda::deblend_objects: the label step has not run on the GPU");
  DeviceGuard guard(gpu.device);
  if (!gpu.deblend) gpu.deblend = std::make_shared<DeblendState>();
  DeblendState& state = *gpu.deblend;
  const size_t n = static_cast<size_t>(gpu.size());
  state.values.reserve(n + 1);
  state.labels_out.reserve(n + 1);
  state.threshold.reserve(1);
  if (how.rms_map) state.thresholds.reserve(n + 1);
  // SEP's cdvalue (the detection image less the background) and, with a filtered detection
  // image, its value (the image less the background) for the measurements.
  const float* detection = gpu.has_detection ? gpu.detection.data() : gpu.image.data();
  sep_detection_values(gpu, how, detection, state.values.data(), how.rms_map ? state.thresholds.data() : nullptr,
                       state.threshold.data());
  DeblendDeviceInput input;
  input.width = gpu.width;
  input.height = gpu.height;
  input.detection = state.values.data();
  // Dual-image mode: the detection image's objects, as the CPU's, measured on it before any filter.
  const float* measured = gpu.dual_image ? (gpu.measured->detection_filtered ? unfiltered_detection(gpu) : nullptr)
                                         : (gpu.has_detection ? gpu.image.data() : nullptr);
  if (measured != nullptr) {
    state.measurement.reserve(n + 1);
    sep_detection_values(gpu, how.unfiltered(), measured, state.measurement.data(), nullptr, state.threshold.data());
    input.measurement = state.measurement.data();
  }
  input.threshold_map = how.rms_map ? state.thresholds.data() : nullptr;
  input.threshold_device = state.threshold.data();
  input.labels = gpu.labels.data();
  input.nlabels_device = &gpu.results.data()->nlabels;
  input.detected = gpu.has_mask ? gpu.mask.data() : nullptr;  // less the objects CLEAN removes
  deblend(input, params, state.labels_out.data(), &gpu.results.data()->nlabels, gpu.stream, state.workspace);
  swap(gpu.labels, state.labels_out);
  gpu.has_deblend = true;
  if (params.clean && params.clean_style == kernels::DeblendCleanStyle::sextractor && input.detected != nullptr) {
    if (!gpu.measured) gpu.measured = std::make_shared<MeasuredImageState>();
    gpu.measured->merged_shapes = true;  // measure: the survivors' shapes from their own pixels
  }
}

}  // namespace imflow::cuda
