// Step `measure`: per-source centroid, flux, npix, peak and bounding box on the (unfiltered) image.
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
    item.catalog = kernels::measure_sources(item.pixels.view(), item.labels.data(), item.nlabels.value());
  }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  void run_cuda(WorkItem&, GpuContext& gpu) const override { cuda::measure(gpu); }
#endif
};
}  // namespace

std::unique_ptr<Step> make_measure_step(ParamReader& params) { return std::make_unique<MeasureStep>(params); }

}  // namespace imflow
