// What the measure step's photometry measures and the layout of its per-source rows: plain
// fixed-size data (host and device), read from the step's parameters (docs/pipeline.md).
#pragma once
#include <cstdint>

#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

inline constexpr int kMaxApertures = 16;
inline constexpr int kMaxFluxFractions = 8;

// The windowed block of a row (`windowed`): SEP's position, then SExtractor's windowed columns.
enum WindowValue : int {
  kWinX, kWinY,          // sep.winpos, 0-based
  kWinFlags,             // SEP's aperture flags (0x10, 0x20) | SExtractor's FLAGS_WIN (1, 2, 4, 8)
  kWinFlux, kWinFluxErr, kWinSnr,   // FLUX_WIN, FLUXERR_WIN, SNR_WIN
  kWinX2, kWinY2, kWinXY,           // X2WIN_IMAGE, Y2WIN_IMAGE, XYWIN_IMAGE
  kWinErrX2, kWinErrY2, kWinErrXY,  // ERRX2WIN_IMAGE, ERRY2WIN_IMAGE, ERRXYWIN_IMAGE
  kWinErrA, kWinErrB, kWinErrTheta,  // ERRAWIN_IMAGE, ERRBWIN_IMAGE, ERRTHETAWIN_IMAGE (radians)
  kWindowValues
};
inline constexpr int kWinSextractorFlags = 0x0f;  // FLAGS_WIN's bits within kWinFlags
// imflow's bit beside SEP's aperture flags in flags_auto and the row's or-ed flags: FLUX_AUTO's
// pixels are crowded, SExtractor's OBJ_CROWDED (FLAGS 1; AutoFlux::crowded). SEP has no such bit.
inline constexpr int32_t kAutoCrowded = 0x0100;

// What to measure (the measure step's parameters; docs/pipeline.md). A row's layout follows it:
// [kron_radius, flux_auto, flux_auto_err, flags_auto] with `auto_flux`, then per aperture
// [flux, err], then one radius per fraction, then the WindowValue block with `windowed`, then
// the SEP aperture flags of every measurement or-ed (0x10: a box cut by the image edge,
// SExtractor's OBJ_APERT_PB) and kAutoCrowded. A vignet (vignet_width x vignet_height > 0) goes
// to a float array of its own, not the row.
struct PhotometrySpec {
  bool auto_flux = false;
  double kron_fact = 2.5;
  double min_diameter = 3.5;  // the circle of radius min_diameter / 2 replaces a smaller Kron ellipse
  double min_kron_radius = 0.0;  // SExtractor's minimum kron_fact x r_k (AutoParams::min_kron_radius)
  // arithmetic: sextractor: SExtractor's float32 tests of FLUX_AUTO's ellipse
  // (AutoParams::sextractor_arithmetic) and of the subsampled apertures (sum_circle_sextractor)
  bool sextractor_arithmetic = false;
  bool mask_neighbours = true;
  int apertures = 0;
  double aperture_diameters[kMaxApertures] = {};
  int aperture_subpix = 0;  // 0: exact pixel overlap (SEP's recipe); N: N x N samples (SExtractor's 5)
  bool aperture_bkgann = false;
  double bkgann_rin = 0.0, bkgann_rout = 0.0;
  int fractions = 0;
  double flux_fractions[kMaxFluxFractions] = {};
  bool windowed = false;
  int vignet_width = 0, vignet_height = 0;  // SExtractor's VIGNET(w, h); 0: none

  IMFLOW_HOST_DEVICE bool measures() const { return auto_flux || apertures > 0 || fractions > 0 || windowed; }
  IMFLOW_HOST_DEVICE bool any() const { return measures() || vignet_width > 0; }
  // Windowed positions and flux_radius need FLUX_AUTO (the normalising flux and sig's radius).
  IMFLOW_HOST_DEVICE bool needs_auto() const { return auto_flux || fractions > 0 || windowed; }
  IMFLOW_HOST_DEVICE int auto_offset() const { return 0; }
  IMFLOW_HOST_DEVICE int aperture_offset() const { return auto_flux ? 4 : 0; }
  IMFLOW_HOST_DEVICE int radius_offset() const { return aperture_offset() + 2 * apertures; }
  IMFLOW_HOST_DEVICE int window_offset() const { return radius_offset() + fractions; }
  IMFLOW_HOST_DEVICE int flags_offset() const { return window_offset() + (windowed ? kWindowValues : 0); }
  IMFLOW_HOST_DEVICE int stride() const { return measures() ? flags_offset() + 1 : 0; }
  IMFLOW_HOST_DEVICE int64_t vignet_size() const { return int64_t{vignet_width} * vignet_height; }
};

// The source a row describes: SEP's x, y (0-based), ellipse a, b, theta and its label; its
// isophotal moments and centroid covariance, which SExtractor's windowed columns fall back to
// when FLAGS_WIN is set, and whether its moments were singular (SExtractor's singuflag).
struct PhotometrySource {
  double x = 0.0, y = 0.0, a = 0.0, b = 0.0, theta = 0.0;
  int32_t label = 0;
  double x2 = 0.0, y2 = 0.0, xy = 0.0;
  double errx2 = 0.0, erry2 = 0.0, errxy = 0.0;
  bool singular = false;
};

}  // namespace imflow::kernels
