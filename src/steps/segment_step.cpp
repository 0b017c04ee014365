// Step `segment`: mask of the pixels above median + nsigma * std (or nsigma * std, the lesson's
// `data > 5 * std`, with relative_to: zero).
#include <stdexcept>

#include "imflow/kernels/segment.hpp"
#include "imflow/params.hpp"
#include "steps.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/segment.hpp"
#endif

namespace imflow {

namespace {
class SegmentStep final : public Step {
 public:
  explicit SegmentStep(ParamReader& params)
      : nsigma_(params.number("nsigma", 5.0, -1e6, 1e6)),
        relative_to_zero_(params.choice("relative_to", "background", {"background", "zero"}) == "zero") {}

  void run_cpu(WorkItem& item) const override {
    const BackgroundStats& stats = item.background.value();
    const double threshold = (relative_to_zero_ ? 0.0 : stats.median) + nsigma_ * stats.std;
    const ImageBuffer& image = item.detection_image();
    item.threshold = threshold;
    item.mask.resize(static_cast<size_t>(image.size()));
    kernels::threshold_mask(image.view(), threshold, item.mask.data());
  }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  void run_cuda(WorkItem&, GpuContext& gpu) const override { cuda::segment(gpu, nsigma_, relative_to_zero_); }
#endif

 private:
  double nsigma_;
  bool relative_to_zero_;
};
}  // namespace

std::unique_ptr<Step> make_segment_step(ParamReader& params) { return std::make_unique<SegmentStep>(params); }

}  // namespace imflow
