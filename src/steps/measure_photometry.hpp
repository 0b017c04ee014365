// The measure step's photometry parameters (auto, apertures, aperture_bkgann, flux_radius,
// windowed, mask_neighbours, zeropoint, zeropoint_keyword, vignet, aperture_subpix;
// docs/pipeline.md) and their CPU run: kernels::measure_photometry per source on the
// background-subtracted image (the GPU's: cuda/photometry.hpp).
#pragma once
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

#include "imflow/kernels/measure.hpp"
#include "imflow/kernels/photometry_spec.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

class ParamReader;

struct PhotometrySetting {
  kernels::PhotometrySpec spec;
  std::optional<double> zeropoint;  // `zeropoint`, the fallback of zeropoint_keyword
  std::string zeropoint_keyword;    // empty: `zeropoint` alone

  // Reads nothing (and leaves the resolved parameters as they were) when no photometry key is given.
  static PhotometrySetting from_params(ParamReader& params);
  // Whether a measure step's resolved parameters ask for photometry (for the tiling plan).
  static bool requested(const YAML::Node& params);

  bool magnitudes() const { return zeropoint.has_value() || !zeropoint_keyword.empty(); }
  // The item's zeropoint: the keyword's value in its FITS header (`hdu_header` as
  // GainSetting::for_item takes it), else `zeropoint`. Throws InputError when neither is there.
  std::optional<double> zeropoint_for(const ItemRef& ref, const std::vector<std::string>& hdu_header = {}) const;
  // The item's table before its rows: the spec and zeropoint_for(ref, hdu_header).
  PhotometryTable table_for(const ItemRef& ref, const std::vector<std::string>& hdu_header = {}) const;

  // item.photometry for item.catalog, measured on item.pixels less `background`'s level or map,
  // with its noise (the RMS map, the mesh grid's rows or the global rms) and gain. In dual-image
  // mode the Kron radii are measured on the unfiltered detection image less
  // `detection_background`, as SExtractor's; otherwise that is not read.
  void measure(WorkItem& item, const kernels::MeasureBackground& background,
               const kernels::MeasureBackground& detection_background) const;
};

}  // namespace imflow
