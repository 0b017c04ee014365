// Step `segment`: mask of the pixels above median + nsigma * std (or nsigma * std, the lesson's
// `data > 5 * std`, with relative_to: zero). After the mesh background: pixel - back(x,y) above
// nsigma * globalrms (relative_to: background) or nsigma * rms(x,y) (relative_to: rms_map); after a
// convolve that subtracted the background (WorkItem::detection_subtracted), pixel above the same.
// compare: float64 (the default) compares in float64; float32 in SEP's arithmetic (value
// pixel - background in float32 against the float32 product nsigma x rms), which `deblend` needs;
// both on the CPU and the GPU, with the same masks.
#include <stdexcept>

#include "imflow/huge_pages.hpp"
#include "imflow/kernels/segment.hpp"
#include "imflow/kernels/segment_map.hpp"
#include "imflow/params.hpp"
#include "imflow/step.hpp"
#include "steps/sep_detection.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/segment.hpp"
#include "cuda/sep_detection.hpp"
#endif

namespace imflow {

namespace {
enum class RelativeTo { background, zero, rms_map };

RelativeTo relative_to_of(const std::string& name) {
  if (name == "zero") return RelativeTo::zero;
  if (name == "rms_map") return RelativeTo::rms_map;
  return RelativeTo::background;
}

class SegmentStep final : public Step {
 public:
  explicit SegmentStep(ParamReader& params)
      : nsigma_(params.number("nsigma", 5.0, -1e6, 1e6)),
        relative_to_(relative_to_of(params.choice("relative_to", "background", {"background", "zero", "rms_map"}))),
        float32_(params.choice("compare", "float64", {"float64", "float32"}) == "float32") {
    if (!(nsigma_ > 0.0)) params.fail(params.child("nsigma"), "nsigma", "must be > 0 (the threshold in noise sigmas)");
  }

  // relative_to: rms_map thresholds against the mesh background's RMS map.
  std::string link(const std::vector<const Step*>& earlier) override {
    if (relative_to_ != RelativeTo::rms_map) return "";
    const Step* background = nullptr;
    for (const Step* step : earlier) {
      if (step->name() == "background") background = step;
    }
    if (background == nullptr || background->param_text("method", "global") != "mesh")
      return "relative_to: rms_map needs the mesh background before it (background: {method: mesh})";
    return "";
  }

  void run_cpu(WorkItem& item) const override {
    const BackgroundStats& stats = item.background.value();
    const ImageBuffer& image = item.detection_image();
    const bool maps = !item.background_map.empty();
    if (relative_to_ == RelativeTo::rms_map && !maps)
      throw std::runtime_error("segment: relative_to: rms_map needs the background step's method: mesh");
    reserve_huge_pages(item.mask, static_cast<size_t>(image.size()));
    item.mask.resize(static_cast<size_t>(image.size()));
    const SegmentThreshold how = threshold_setting(item);
    item.segment_threshold = how;
    if (float32_) {
      item.threshold = (maps || !how.subtract_background ? 0.0 : stats.median) + nsigma_ * stats.std;
      kernels::sep_threshold_mask(image.view(), sep_detection_of(item, how), item.mask.data());
      return;
    }
    if (maps && relative_to_ != RelativeTo::zero) {
      // The threshold above the local background (none left to subtract after a convolve that
      // subtracted it); per pixel with rms_map (reported with the global rms).
      item.threshold = nsigma_ * stats.std;
      const float* back = how.subtract_background ? item.background_map.data() : nullptr;
      if (relative_to_ == RelativeTo::rms_map && item.rms_map.empty()) {  // the CPU mesh background's grid
        if (!item.mesh_grid) throw std::runtime_error("segment: relative_to: rms_map found no RMS map or mesh grid");
        kernels::threshold_mask_mesh_rms(image.view(), back, *item.mesh_grid, nsigma_, item.mask.data());
        return;
      }
      kernels::threshold_mask_local(image.view(), back, relative_to_ == RelativeTo::rms_map ? item.rms_map.data() : nullptr,
                                    nsigma_, stats.std, item.mask.data());
      return;
    }
    const double threshold = (how.subtract_background ? stats.median : 0.0) + nsigma_ * stats.std;
    item.threshold = threshold;
    kernels::threshold_mask(image.view(), threshold, item.mask.data());
  }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  void run_cuda(WorkItem& item, GpuContext& gpu) const override {
    item.segment_threshold = threshold_setting(item);
    if (float32_) {
      cuda::segment_sep(gpu, *item.segment_threshold);
    } else {
      cuda::segment(gpu, *item.segment_threshold);
    }
  }
#endif

 private:
  // The threshold's terms; a detection image a convolve made less its background has none to subtract.
  SegmentThreshold threshold_setting(const WorkItem& item) const {
    SegmentThreshold how;
    how.nsigma = nsigma_;
    how.subtract_background = relative_to_ != RelativeTo::zero && !item.detection_subtracted;
    how.detection_subtracted = relative_to_ != RelativeTo::zero && item.detection_subtracted;
    how.rms_map = relative_to_ == RelativeTo::rms_map;
    how.float32 = float32_;
    return how;
  }

  double nsigma_;
  RelativeTo relative_to_;
  bool float32_;
};
}  // namespace

std::unique_ptr<Step> make_segment_step(ParamReader& params) { return std::make_unique<SegmentStep>(params); }

}  // namespace imflow
