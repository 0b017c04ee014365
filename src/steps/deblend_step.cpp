// Step `deblend`: SExtractor's multi-threshold deblending and CLEAN (SEP 1.4.1's, object for
// object: kernels::deblend_sources; clean_style: sextractor cleans as SExtractor 2.25, merging,
// and draws: sextractor takes its random numbers) of the 8-connected segments `label` found. It rebuilds the
// values and thresholds `segment` detected with, in SEP's float32 arithmetic (steps/sep_detection.hpp),
// drops segments under minarea, splits blends, and replaces the label map by the objects,
// numbered in sep.extract's catalog order, marking in segment's mask what CLEAN removed (the
// photometry's neighbours, kernels::DeblendInput::detected); `measure` then measures them (with
// SEP's centre for the children of a blend). On the GPU the same, object for object
// (cuda/deblend_objects.hpp).
#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "imflow/kernels/deblend.hpp"
#include "imflow/params.hpp"
#include "imflow/step.hpp"
#include "steps/sep_detection.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/deblend_objects.hpp"
#endif

namespace imflow {

namespace {
// SExtractor's blankh for the last convolve before deblend that filters the detection image: its
// kernel's height / 2 + 1 (the lesson kernel is 15 x 15, a gaussian `size` square); 0 without one.
int blank_lag_of(const std::vector<const Step*>& earlier) {
  int lag = 0;
  for (const Step* step : earlier) {
    if (step->name() != "convolve" || step->param_text("apply_to", "detection") != "detection") continue;
    const YAML::Node kernel = step->params()["kernel"];
    int64_t rows = 15;
    if (kernel.IsDefined() && kernel.IsSequence()) {
      rows = static_cast<int64_t>(kernel.size());
    } else if (!kernel.IsDefined() || kernel.Scalar() != "lesson") {
      rows = std::stoll(step->param_text("size", "5"));
    }
    lag = static_cast<int>(rows / 2 + 1);
  }
  return lag;
}

class DeblendStep final : public Step {
 public:
  explicit DeblendStep(ParamReader& params) {
    params_.nthresh = static_cast<int>(params.integer("nthresh", 32, 1, 1024));
    params_.mincont = params.number("mincont", 0.005, 0.0, 1.0);
    params_.clean = params.boolean("clean", true);
    params_.clean_param = params.number("clean_param", 1.0, 0.0, 1e6);
    if (!(params_.clean_param > 0.0)) params.fail(params.child("clean_param"), "clean_param", "must be > 0");
    params_.minarea = static_cast<int>(params.integer("minarea", 5, 1, std::numeric_limits<int32_t>::max()));
    params_.clean_style = params.choice("clean_style", "sep", {"sep", "sextractor"}) == "sextractor"
                              ? kernels::DeblendCleanStyle::sextractor
                              : kernels::DeblendCleanStyle::sep;
    params_.allocation = params.choice("draws", "sep", {"sep", "sextractor"}) == "sextractor"
                             ? kernels::DeblendAllocation::sextractor_random
                             : kernels::DeblendAllocation::sep_random;
    const kernels::DeblendParams defaults;
    params_.memory_bufsize = static_cast<int>(params.integer("memory_bufsize", defaults.memory_bufsize, 8, 65534));
    params_.memory_objstack = static_cast<int>(params.integer("memory_objstack", defaults.memory_objstack, 16, 65536));
    // SExtractor's CLEAN list only: another size with SEP's CLEAN is refused (the defaults, as
    // `imflow validate` writes them, load again).
    const char* other_size = params_.memory_bufsize != defaults.memory_bufsize     ? "memory_bufsize"
                             : params_.memory_objstack != defaults.memory_objstack ? "memory_objstack"
                                                                                   : nullptr;
    if (other_size != nullptr && params_.clean_style != kernels::DeblendCleanStyle::sextractor) {
      params.fail(params.child(other_size), other_size, "applies to clean_style: sextractor only");
    }
  }

  // The segments must be 8-connected (SEP's and SExtractor's), found by segment in SEP's float32
  // arithmetic, and not already deblended.
  std::string link(const std::vector<const Step*>& earlier) override {
    const Step* label = nullptr;
    const Step* segment = nullptr;
    for (const Step* step : earlier) {
      if (step->name() == "deblend")
        return "deblend runs once, on the segments of label (an earlier deblend already split them)";
      if (step->name() == "label") label = step;
      if (step->name() == "segment") segment = step;
    }
    if (label == nullptr || segment == nullptr) return "needs segment and label before it";
    if (label->param_text("connectivity", "4") != "8")
      return "needs 8-connected segments, as SExtractor and SEP find them: the label step before it has connectivity " +
             label->param_text("connectivity", "4") + " (set label: {connectivity: 8})";
    if (segment->param_text("compare", "float64") != "float32")
      return "needs the segments thresholded as SEP does, in float32 (set segment: {compare: float32}; "
             "docs/astronomy.md, Deblending)";
    params_.blank_lag = blank_lag_of(earlier);
    return "";
  }

  void run_cpu(WorkItem& item) const override {
    if (!item.segment_threshold || !item.nlabels)
      throw std::runtime_error("deblend: needs the segment and label steps' results");
    const ImageBuffer& detection = item.detection_image();
    const int64_t width = detection.width(), height = detection.height();
    const size_t n = static_cast<size_t>(detection.size());
    const kernels::SepDetection how = sep_detection_of(item, *item.segment_threshold);
    // SEP's cdvalue (the detection image less the background) and thresholds; with a filtered
    // detection image also SEP's value (the image less the background).
    std::vector<float> values(n), thresholds(how.per_pixel() ? n : 0), measurement;
    kernels::sep_detection_values(detection.view(), how, values.data(), thresholds.data());
    // In dual-image mode (input.detect) the objects are the detection image's, as SExtractor's:
    // measured on it before any filter.
    const ImageBuffer* measured = item.dual_image ? (item.detection_as_read.empty() ? nullptr : &item.detection_as_read)
                                                  : (item.detection.empty() ? nullptr : &item.pixels);
    if (measured != nullptr) {  // less its background, also when the filter subtracted it from the detection image
      measurement.resize(n);
      kernels::sep_detection_values(measured->view(), sep_detection_of(item, item.segment_threshold->unfiltered()),
                                    measurement.data(), nullptr);
    }
    kernels::DeblendInput input;
    input.detection = {values.data(), width, height};
    input.measurement = measurement.empty() ? nullptr : measurement.data();
    input.threshold_map = how.per_pixel() ? thresholds.data() : nullptr;
    input.threshold = how.threshold();
    input.labels = item.labels.data();
    input.nlabels = *item.nlabels;
    input.detected = item.mask.size() == n ? item.mask.data() : nullptr;  // less the objects CLEAN removes
    std::vector<int32_t> objects(n);
    auto result = std::make_shared<kernels::DeblendResult>(kernels::deblend_sources(input, params_, objects.data()));
    item.labels.swap(objects);
    item.nlabels = static_cast<int32_t>(result->objects.size());
    item.metrics["deblend_segments"] = static_cast<double>(result->segments);
    item.metrics["deblend_split"] = static_cast<double>(result->segments_split);
    item.metrics["deblend_cleaned"] = static_cast<double>(result->objects_cleaned);
    item.deblend = std::move(result);
  }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  void run_cuda(WorkItem& item, GpuContext& gpu) const override {
    if (!item.segment_threshold) throw std::runtime_error("deblend: needs the segment and label steps' results");
    cuda::deblend_objects(gpu, *item.segment_threshold, params_);
  }
#endif

 private:
  kernels::DeblendParams params_;
};
}  // namespace

std::unique_ptr<Step> make_deblend_step(ParamReader& params) { return std::make_unique<DeblendStep>(params); }

}  // namespace imflow
