// What the measure step's photometry measures and the layout of its per-source rows: plain
// fixed-size data (host and device), read from the step's parameters (docs/pipeline.md).
#pragma once
#include <cstdint>

#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

inline constexpr int kMaxApertures = 16;
inline constexpr int kMaxFluxFractions = 8;

// What to measure (the measure step's parameters; docs/pipeline.md). A row's layout follows it:
// [kron_radius, flux_auto, flux_auto_err, flags_auto] with `auto_flux`, then per aperture
// [flux, err], then one radius per fraction, then [xwin, ywin, flags_win] with `windowed`.
struct PhotometrySpec {
  bool auto_flux = false;
  double kron_fact = 2.5;
  double min_diameter = 3.5;  // the circle of radius min_diameter / 2 replaces a smaller Kron ellipse
  bool mask_neighbours = true;
  int apertures = 0;
  double aperture_diameters[kMaxApertures] = {};
  bool aperture_bkgann = false;
  double bkgann_rin = 0.0, bkgann_rout = 0.0;
  int fractions = 0;
  double flux_fractions[kMaxFluxFractions] = {};
  bool windowed = false;

  IMFLOW_HOST_DEVICE bool any() const { return auto_flux || apertures > 0 || fractions > 0 || windowed; }
  // Windowed positions and flux_radius need FLUX_AUTO (the normalising flux and sig's radius).
  IMFLOW_HOST_DEVICE bool needs_auto() const { return auto_flux || fractions > 0 || windowed; }
  IMFLOW_HOST_DEVICE int auto_offset() const { return 0; }
  IMFLOW_HOST_DEVICE int aperture_offset() const { return auto_flux ? 4 : 0; }
  IMFLOW_HOST_DEVICE int radius_offset() const { return aperture_offset() + 2 * apertures; }
  IMFLOW_HOST_DEVICE int window_offset() const { return radius_offset() + fractions; }
  IMFLOW_HOST_DEVICE int stride() const { return window_offset() + (windowed ? 3 : 0); }
};

// The source a row describes: SEP's x, y (0-based), ellipse a, b, theta and its label.
struct PhotometrySource {
  double x = 0.0, y = 0.0, a = 0.0, b = 0.0, theta = 0.0;
  int32_t label = 0;
};

}  // namespace imflow::kernels
