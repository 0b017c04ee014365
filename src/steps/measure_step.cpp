// Step `measure`: per-source centroid, flux, npix, peak, bounding box, flux_iso and its error,
// second moments, centroid errors, ellipse and flags on the (unfiltered) image,
// background-subtracted as kernels::MeasureBackground says; the errors use the background's RMS
// (the mesh map, or with noise: global or the global background its global RMS) and, with a gain
// (measure_gain.hpp), the sources' Poisson noise.
// After `deblend`, the children of a blend are measured as SEP's analyse does: x, y are SEP's
// centre of the object (its branch's barycentre) and the moments and their errors are taken
// about it (kernels::SourceSums::finish_about), flagged kFlagDeblended. With photometry
// parameters (measure_photometry.hpp), the catalog's photometry rows follow, on the CPU or the GPU
// (cuda/photometry.hpp: the same per-source function); with a flag map (input.flags, CPU only),
// each source's IMAFLAGS_ISO and NIMAFLAGS_ISO; with `saturation` (measure_saturation.hpp) the
// saturated flag. In dual-image mode (input.detect) the
// shapes come from the detection image and the fluxes from the measured one; after a detection
// filter that subtracted the background, the shapes from the filtered values; after SExtractor's
// CLEAN (clean_style sextractor) a survivor's shapes from its own pixels, its sums from all.
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "imflow/kernels/deblend.hpp"
#include "imflow/kernels/dual_image.hpp"
#include "imflow/kernels/measure.hpp"
#include "imflow/params.hpp"
#include "imflow/step.hpp"
#include "engine/companion_inputs.hpp"
#include "steps/measure_gain.hpp"
#include "steps/measure_photometry.hpp"
#include "steps/measure_saturation.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/measure.hpp"
#include "cuda/photometry.hpp"
#endif

namespace imflow {

namespace {
class MeasureStep final : public Step {
 public:
  explicit MeasureStep(ParamReader& params)
      : gain_(GainSetting::from_params(params)),
        global_noise_(params.choice("noise", "map", {"map", "global"}) == "global"),
        photometry_(PhotometrySetting::from_params(params)),
        saturation_(SaturationSetting::from_params(params)) {}

  void run_cpu(WorkItem& item) const override {
    const double gain = gain_.for_item(item.ref, item.fits_header);
    item.gain = gain;
    const kernels::MeasureBackground background = background_of(item, gain, item.dual_image, global_noise_);
    const kernels::MeasureBackground detection_background =
        item.dual_image ? background_of(item, gain, false, global_noise_) : background;
    item.catalog = catalog_of(item, item.pixels.view(), background, item.labels.data());
    const std::vector<int32_t> own = own_pixel_labels(item);
    if (item.dual_image || item.detection_subtracted || !own.empty()) {
      // Positions, moments, shapes and their errors as SExtractor and SEP take them: after a
      // detection filter that subtracted the background (FILTER Y), weighted by the filtered
      // values (their cdvalue); in dual-image mode otherwise from the detection image as read,
      // less its background; a CLEAN survivor's from its own pixels. Fluxes and peaks from the
      // measured image, and of everything merged.
      const int32_t* labels = own.empty() ? item.labels.data() : own.data();
      Catalog shapes;
      if (item.detection_subtracted) {
        shapes = catalog_of(item, item.detection.view(), detection_background.noise_only(), labels);
      } else if (item.dual_image) {
        shapes = catalog_of(item, item.unfiltered_detection().view(), detection_background, labels);
      } else {
        shapes = catalog_of(item, item.pixels.view(), background, labels);
      }
      for (size_t i = 0; i < shapes.size(); ++i) {
        if (own.empty()) kernels::take_measured_fluxes(shapes[i], (*item.catalog)[i]);
        else kernels::take_merged_sums(shapes[i], (*item.catalog)[i]);
      }
      item.catalog = std::move(shapes);
    }
    flag_saturated(*item.catalog, saturation_.for_item(item.ref, item.fits_header), background.map, item.pixels.width(),
                   item.pixels.height());  // the measured image's peaks
    if (photometry_.spec.any() || photometry_.magnitudes()) {
      photometry_.measure(item, background, detection_background);
    }
    catalog_flag_map(item);  // input.flags: the IMAFLAGS_ISO columns
  }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  // The photometry rows are measured when the results are collected (cuda::photometry); the
  // zeropoint is read here, on this host thread, as the gain.
  void run_cuda(WorkItem& item, GpuContext& gpu) const override {
    item.gain = gain_.for_item(item.ref, item.fits_header);  // the read kept the header
    gpu.weight_gain = item.weight_gain;
    gpu.global_noise = global_noise_;
    gpu.saturation = saturation_.for_item(item.ref, item.fits_header);
    cuda::measure(gpu, *item.gain);
    if (!photometry_.spec.any() && !photometry_.magnitudes()) return;
    item.photometry = photometry_.table_for(item.ref, item.fits_header);
    if (photometry_.spec.any()) cuda::photometry(gpu, photometry_.spec);
  }
#endif

 private:
  // The background measurements subtract and their noise: the item's background (the detection
  // image's: its map, its RMS map or a weight map's, or its global level), or in dual-image mode
  // with `measured_image` the measured image's own (input.detect; its RMS map or input.weight's).
  // With `global_noise` (noise: global, SExtractor's WEIGHT_TYPE NONE) the mesh map is subtracted
  // and the noise is its global RMS.
  static kernels::MeasureBackground background_of(const WorkItem& item, double gain, bool measured_image,
                                                  bool global_noise) {
    kernels::MeasureBackground background;
    background.gain = gain;
    const bool own = measured_image && item.measure_background;
    const std::vector<float>& map = own ? item.measure_background_map : item.background_map;
    const std::optional<BackgroundStats>& stats = own ? item.measure_background : item.background;
    // A weight map's noise: the detection image's (input.weight, or input.detect.weight), or in
    // dual-image mode the measured image's (input.weight).
    const std::vector<float>& rms_map = own ? item.measure_rms_map : item.rms_map;
    if (!map.empty() && static_cast<int64_t>(map.size()) == item.pixels.size()) {
      background.map = map.data();
      if (static_cast<int64_t>(rms_map.size()) == item.pixels.size()) {
        background.rms_map = rms_map.data();
        // With input.weight.gain: SExtractor's WEIGHT_GAIN against the image's backsig.
        if (item.weight_gain && stats) background.weight_gain_rms = stats->std;
      } else if (const auto& grid = own ? item.measure_mesh_grid : item.mesh_grid) {
        background.rms_grid = grid.get();
      }
    } else if (stats) {
      background.level = stats->median;
      background.rms = stats->std;
    }
    if (global_noise && stats) {
      background.rms_map = nullptr;
      background.rms_grid = nullptr;
      background.rms = stats->std;
    }
    return background;
  }

  // The catalog of the item's `labels` (or deblended objects) measured on `image`.
  static Catalog catalog_of(const WorkItem& item, ConstImageView image, const kernels::MeasureBackground& background,
                            const int32_t* labels) {
    if (!item.deblend) return kernels::measure_sources(image, labels, item.nlabels.value(), background);
    return kernels::measure_deblended(image, labels, item.nlabels.value(), *item.deblend, background);
  }

  // After clean_style sextractor merged objects: the labels of each object's own pixels (a merged
  // object's are not detected any more, DeblendInput::detected), as SExtractor keeps a survivor's
  // moments from before its merges; empty when nothing was merged.
  static std::vector<int32_t> own_pixel_labels(const WorkItem& item) {
    if (!item.deblend || item.mask.size() != item.labels.size()) return {};
    const auto& objects = item.deblend->objects;
    if (std::none_of(objects.begin(), objects.end(), [](const kernels::DeblendObject& o) { return o.merged; })) return {};
    std::vector<int32_t> own(item.labels.size());
    for (size_t i = 0; i < own.size(); ++i) own[i] = item.mask[i] == 1 ? item.labels[i] : 0;
    return own;
  }

  GainSetting gain_;
  bool global_noise_;
  PhotometrySetting photometry_;
  SaturationSetting saturation_;
};
}  // namespace

std::unique_ptr<Step> make_measure_step(ParamReader& params) { return std::make_unique<MeasureStep>(params); }

}  // namespace imflow
