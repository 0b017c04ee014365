// Step `measure`: per-source centroid, flux, npix, peak, bounding box, flux_iso, second moments,
// ellipse and flags on the (unfiltered) image, background-subtracted as kernels::MeasureBackground says.
#include "imflow/kernels/measure.hpp"
#include "imflow/params.hpp"
#include "steps.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/measure.hpp"
#endif

namespace imflow {

namespace {
class MeasureStep final : public Step {
 public:
  explicit MeasureStep(ParamReader&) {}

  void run_cpu(WorkItem& item) const override {
    kernels::MeasureBackground background;
    if (!item.background_map.empty() && static_cast<int64_t>(item.background_map.size()) == item.pixels.size()) {
      background.map = item.background_map.data();
    } else if (item.background) {
      background.level = item.background->median;
    }
    item.catalog =
        kernels::measure_sources(item.pixels.view(), item.labels.data(), item.nlabels.value(), background);
  }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  void run_cuda(WorkItem&, GpuContext& gpu) const override { cuda::measure(gpu); }
#endif
};
}  // namespace

std::unique_ptr<Step> make_measure_step(ParamReader& params) { return std::make_unique<MeasureStep>(params); }

}  // namespace imflow
