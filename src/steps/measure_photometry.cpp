// PhotometrySetting (measure_photometry.hpp): the parameters' checks, and the CPU run over an
// item's catalog, one kernels::measure_photometry row per source on all threads (SExtractor's
// WEIGHT_GAIN errors under input.weight.gain).
#include "steps/measure_photometry.hpp"

#include <tbb/parallel_for.h>

#include <cmath>
#include <limits>
#include <vector>

#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/kernels/mesh_rows.hpp"
#include "imflow/kernels/photometry.hpp"
#include "imflow/kernels/photometry_source.hpp"
#include "imflow/params.hpp"
#include "steps/measure_gain.hpp"

namespace imflow {

namespace {
constexpr const char* kPhotometryKeys[] = {"auto",     "apertures",       "aperture_bkgann", "flux_radius",
                                           "windowed", "mask_neighbours", "zeropoint",       "zeropoint_keyword",
                                           "vignet",   "aperture_subpix", "arithmetic"};
constexpr double kMaxVignetSide = 1024;  // pixels: a stamp is a catalog cell, not an image
constexpr double kSextractorMinKronRadius = 3.5;  // PHOT_AUTOPARAMS' second value

void read_auto(ParamReader& params, kernels::PhotometrySpec& spec) {
  const YAML::Node node = params.child("auto");
  if (node.IsScalar()) {
    bool on = false;
    if (!YAML::convert<bool>::decode(node, on)) {
      params.fail(node, "auto", "expected true, false or {kron_fact, min_radius, min_kron_radius}");
    }
    spec.auto_flux = on;
    return;
  }
  if (!node.IsMap()) params.fail(node, "auto", "expected true, false or {kron_fact, min_radius, min_kron_radius}");
  ParamReader reader(node, params.where() + ".auto", params.file());
  spec.auto_flux = true;
  spec.kron_fact = reader.number("kron_fact", spec.kron_fact, 1e-6, 1e6);
  spec.min_diameter = reader.number("min_radius", spec.min_diameter, 0.0, 1e6);
  spec.min_kron_radius = reader.number("min_kron_radius", spec.min_kron_radius, 0.0, 1e6);
  reader.finish();
}

void read_apertures(ParamReader& params, kernels::PhotometrySpec& spec) {
  const std::vector<double> diameters = params.number_list("apertures", {});
  if (diameters.size() > static_cast<size_t>(kernels::kMaxApertures)) {
    params.fail(params.child("apertures"), "apertures", "at most " + std::to_string(kernels::kMaxApertures) + " diameters");
  }
  for (size_t k = 0; k < diameters.size(); ++k) {
    if (!(diameters[k] > 0.0 && diameters[k] < 1e6)) params.fail(params.child("apertures"), "apertures", "diameters must be > 0 pixels");
    for (size_t j = 0; j < k; ++j) {
      if (diameters[j] == diameters[k]) params.fail(params.child("apertures"), "apertures", "a diameter is listed twice");
    }
    spec.aperture_diameters[k] = diameters[k];
  }
  spec.apertures = static_cast<int>(diameters.size());
  if (!params.has("aperture_bkgann")) return;
  const std::vector<double> annulus = params.number_list("aperture_bkgann", {});
  if (annulus.size() != 2 || !(annulus[0] >= 0.0 && annulus[1] > annulus[0])) {
    params.fail(params.child("aperture_bkgann"), "aperture_bkgann", "expected [rin, rout] with 0 <= rin < rout (pixels)");
  }
  if (spec.apertures == 0) params.fail(params.child("aperture_bkgann"), "aperture_bkgann", "needs apertures");
  spec.aperture_bkgann = true;
  spec.bkgann_rin = annulus[0];
  spec.bkgann_rout = annulus[1];
}

void read_fractions(ParamReader& params, kernels::PhotometrySpec& spec) {
  const std::vector<double> fractions = params.number_list("flux_radius", {});
  if (fractions.size() > static_cast<size_t>(kernels::kMaxFluxFractions)) {
    params.fail(params.child("flux_radius"), "flux_radius", "at most " + std::to_string(kernels::kMaxFluxFractions) + " fractions");
  }
  for (size_t k = 0; k < fractions.size(); ++k) {
    if (!(fractions[k] > 0.0 && fractions[k] <= 1.0)) params.fail(params.child("flux_radius"), "flux_radius", "fractions must be in (0, 1]");
    for (size_t j = 0; j < k; ++j) {
      if (fractions[j] == fractions[k]) params.fail(params.child("flux_radius"), "flux_radius", "a fraction is listed twice");
    }
    spec.flux_fractions[k] = fractions[k];
  }
  spec.fractions = static_cast<int>(fractions.size());
}

// vignet: [width, height], SExtractor's VIGNET(width, height).
void read_vignet(ParamReader& params, kernels::PhotometrySpec& spec) {
  if (!params.has("vignet")) return;
  const std::vector<double> size = params.number_list("vignet", {});
  if (size.size() != 2 || !(size[0] >= 1 && size[0] <= kMaxVignetSide && size[1] >= 1 && size[1] <= kMaxVignetSide) ||
      size[0] != std::floor(size[0]) || size[1] != std::floor(size[1])) {
    params.fail(params.child("vignet"), "vignet", "expected [width, height], whole pixels from 1 to 1024");
  }
  spec.vignet_width = static_cast<int>(size[0]);
  spec.vignet_height = static_cast<int>(size[1]);
}

// `pixels` less the background's map or level (the values SEP's recipe measures: data - bkg) into
// `data`; `mask` 1 where that is not finite, left empty when every value is.
void subtract_background(const ImageBuffer& pixels, const kernels::MeasureBackground& background, std::vector<float>& data,
                         std::vector<float>& mask) {
  const int64_t n = pixels.size();
  data.resize(static_cast<size_t>(n));
  const float* values = pixels.data();
  const auto level = static_cast<float>(background.level);
  for (int64_t i = 0; i < n; ++i) data[i] = values[i] - (background.map ? background.map[i] : level);
  mask.clear();
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(data[i])) continue;
    if (mask.empty()) mask.assign(static_cast<size_t>(n), 0.0f);
    mask[i] = 1.0f;
  }
}
}  // namespace

bool PhotometrySetting::requested(const YAML::Node& params) {
  for (const char* key : kPhotometryKeys) {
    if (params[key].IsDefined()) return true;
  }
  return false;
}

PhotometrySetting PhotometrySetting::from_params(ParamReader& params) {
  PhotometrySetting setting;
  bool any = false;
  for (const char* key : kPhotometryKeys) any = any || params.has(key);
  if (!any) return setting;
  kernels::PhotometrySpec& spec = setting.spec;
  // FLUX_AUTO (also behind flux_radius and windowed) as SExtractor's PHOT_AUTOPARAMS 2.5, 3.5
  // reads it: kron_fact x r_k at least 3.5, no circle. SEP's documented recipe, which swaps in a
  // circle of diameter 3.5 when r_k sqrt(a b) < 1.75, is {min_radius: 3.5, min_kron_radius: 0}.
  spec.min_diameter = 0.0;
  spec.min_kron_radius = kSextractorMinKronRadius;
  if (params.has("auto")) read_auto(params, spec);
  read_apertures(params, spec);
  read_fractions(params, spec);
  read_vignet(params, spec);
  spec.windowed = params.boolean("windowed", false);
  if (params.has("aperture_subpix")) {
    if (spec.apertures == 0) params.fail(params.child("aperture_subpix"), "aperture_subpix", "needs apertures");
    spec.aperture_subpix = static_cast<int>(params.integer("aperture_subpix", 0, 0, 64));
  }
  spec.mask_neighbours = params.boolean("mask_neighbours", true);
  spec.sextractor_arithmetic = params.choice("arithmetic", "sep", {"sep", "sextractor"}) == "sextractor";
  if (params.has("zeropoint")) setting.zeropoint = params.number("zeropoint", 0.0, -1e6, 1e6);
  if (params.has("zeropoint_keyword")) {
    setting.zeropoint_keyword = params.text("zeropoint_keyword", "");
    if (setting.zeropoint_keyword.empty() || !is_fits_keyword(setting.zeropoint_keyword)) {
      params.fail(params.child("zeropoint_keyword"), "zeropoint_keyword",
                  "'" + setting.zeropoint_keyword + "' is not a FITS keyword (up to 8 letters, digits, '-' or '_')");
    }
  }
  return setting;
}

std::optional<double> PhotometrySetting::zeropoint_for(const ItemRef& ref, const std::vector<std::string>& hdu_header) const {
  if (zeropoint_keyword.empty()) return zeropoint;
  if (is_fits_input(ref.path)) {
    const std::optional<double> value = read_fits_number_keyword(ref.path, ref.hdu, zeropoint_keyword, hdu_header);
    if (value && std::isfinite(*value)) return value;
  }
  if (zeropoint) return zeropoint;
  throw InputError(ref.path.string() + ": no numeric header keyword " + zeropoint_keyword +
                   " for the magnitudes (measure's zeropoint_keyword) and no zeropoint to fall back to");
}

PhotometryTable PhotometrySetting::table_for(const ItemRef& ref, const std::vector<std::string>& hdu_header) const {
  PhotometryTable table;
  table.spec = spec;
  table.zeropoint = zeropoint_for(ref, hdu_header);
  return table;
}

void PhotometrySetting::measure(WorkItem& item, const kernels::MeasureBackground& background,
                                const kernels::MeasureBackground& detection_background) const {
  PhotometryTable table = table_for(item.ref, item.fits_header);
  const Catalog& catalog = *item.catalog;
  const int64_t width = item.pixels.width(), height = item.pixels.height(), n = item.pixels.size();
  table.rows.assign(catalog.size() * static_cast<size_t>(spec.stride()), 0.0);
  const auto vignet_size = static_cast<size_t>(spec.vignet_size());
  table.vignets.assign(catalog.size() * vignet_size, 0.0f);
  if ((spec.stride() == 0 && vignet_size == 0) || catalog.empty()) {
    item.photometry = std::move(table);
    return;
  }
  std::vector<float>& data = item.scratch;
  std::vector<float> mask;
  subtract_background(item.pixels, background, data, mask);
  kernels::ApertureImage image;
  image.data = {data.data(), width, height};
  image.gain = background.gain;
  image.mask = mask.empty() ? nullptr : mask.data();
  // SExtractor's blanked pixels: every detected one (segment's mask, less what CLEAN removed).
  image.detected = item.mask.size() == static_cast<size_t>(n) ? item.mask.data() : nullptr;
  image.noise_kind = kernels::NoiseKind::stddev;
  std::vector<float> rms;
  if (background.rms_map) {
    image.noise = background.rms_map;
  } else if (background.rms_grid) {
    rms.resize(static_cast<size_t>(n));
    kernels::MeshRows rows(*background.rms_grid);
    for (int64_t y = 0; y < height; ++y) rows.rms(y, rms.data() + y * width);
    image.noise = rms.data();
  } else {
    image.noise_value = background.rms;  // NaN without a noise estimate: NaN errors
  }
  // Dual-image mode: the Kron radii on the detection image as read, less its own background.
  std::vector<float> detection_data, detection_mask;
  kernels::ApertureImage detection;
  if (item.dual_image && spec.needs_auto()) {
    subtract_background(item.unfiltered_detection(), detection_background, detection_data, detection_mask);
    detection.data = {detection_data.data(), width, height};
    detection.mask = detection_mask.empty() ? nullptr : detection_mask.data();
  }
  const kernels::ApertureImage* kron_image = detection_data.empty() ? nullptr : &detection;
  const int32_t* labels = item.labels.empty() ? nullptr : item.labels.data();
  const double backnoise2 = background.weight_gain_rms * background.weight_gain_rms;  // 0: no WEIGHT_GAIN
  tbb::parallel_for(tbb::blocked_range<size_t>(0, catalog.size(), 64), [&](const tbb::blocked_range<size_t>& range) {
    for (size_t i = range.begin(); i != range.end(); ++i) {
      const Source& s = catalog[i];
      const kernels::PhotometrySource source = kernels::photometry_source(s);
      double* row = table.rows.data() + i * spec.stride();
      kernels::measure_photometry(image, labels, spec, source, row,
                                  vignet_size > 0 ? table.vignets.data() + i * vignet_size : nullptr, backnoise2,
                                  kron_image);
    }
  });
  item.photometry = std::move(table);
}

}  // namespace imflow
