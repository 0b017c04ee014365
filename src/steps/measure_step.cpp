// Step `measure`: per-source centroid, flux, npix, peak, bounding box, flux_iso and its error,
// second moments, centroid errors, ellipse and flags on the (unfiltered) image,
// background-subtracted as kernels::MeasureBackground says; the errors use the background's RMS
// (the mesh map, or the global std) and, with a gain (measure_gain.hpp), the sources' Poisson noise.
// After `deblend`, the children of a blend are measured as SEP's analyse does: x, y are SEP's
// centre of the object (its branch's barycentre) and the moments and their errors are taken
// about it (kernels::SourceSums::finish_about), flagged kFlagDeblended. With photometry
// parameters (measure_photometry.hpp), the catalog's photometry rows follow, on the CPU only.
#include <stdexcept>

#include "imflow/kernels/deblend.hpp"
#include "imflow/kernels/measure.hpp"
#include "imflow/params.hpp"
#include "imflow/step.hpp"
#include "steps/measure_gain.hpp"
#include "steps/measure_photometry.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/measure.hpp"
#endif

namespace imflow {

namespace {
class MeasureStep final : public Step {
 public:
  explicit MeasureStep(ParamReader& params)
      : gain_(GainSetting::from_params(params)), photometry_(PhotometrySetting::from_params(params)) {}

  void run_cpu(WorkItem& item) const override {
    kernels::MeasureBackground background;
    background.gain = gain_.for_item(item.ref);
    item.gain = background.gain;
    if (!item.background_map.empty() && static_cast<int64_t>(item.background_map.size()) == item.pixels.size()) {
      background.map = item.background_map.data();
      if (static_cast<int64_t>(item.rms_map.size()) == item.pixels.size()) {
        background.rms_map = item.rms_map.data();
      } else if (item.mesh_grid) {
        background.rms_grid = item.mesh_grid.get();
      }
    } else if (item.background) {
      background.level = item.background->median;
      background.rms = item.background->std;
    }
    if (!item.deblend) {
      item.catalog =
          kernels::measure_sources(item.pixels.view(), item.labels.data(), item.nlabels.value(), background);
    } else {
      item.catalog = kernels::measure_deblended(item.pixels.view(), item.labels.data(), item.nlabels.value(),
                                                *item.deblend, background);
    }
    if (photometry_.spec.any() || photometry_.magnitudes()) photometry_.measure(item, background);
  }

#ifdef IMFLOW_HAVE_CUDA
  // The photometry has no GPU twin yet: a pipeline asking for it runs with device: cpu.
  bool has_cuda() const override { return !photometry_.spec.any() && !photometry_.magnitudes(); }
  void run_cuda(WorkItem& item, GpuContext& gpu) const override {
    item.gain = gain_.for_item(item.ref);  // a header read on this host thread when gain_keyword is set
    cuda::measure(gpu, *item.gain);
  }
#endif

 private:
  GainSetting gain_;
  PhotometrySetting photometry_;
};
}  // namespace

std::unique_ptr<Step> make_measure_step(ParamReader& params) { return std::make_unique<MeasureStep>(params); }

}  // namespace imflow
