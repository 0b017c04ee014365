// One source's photometry row (kernels::measure_photometry): SEP 1.4.1's documented recipes for
// FLUX_AUTO, aperture fluxes, FLUX_RADIUS and XWIN/YWIN, chained as its docs chain them.
#include "imflow/kernels/photometry.hpp"

#include <cmath>
#include <limits>

namespace imflow::kernels {

namespace {
constexpr double kHalfLight = 0.5;
constexpr double kRadiusInA = 6.0;         // flux_radius's rmax = 6 a
constexpr int kRadiusSubpix = 5;
constexpr double kSigPerRadius = 2.0 / 2.35;  // winpos's sig = 2 / 2.35 x flux_radius(0.5)
}  // namespace

void measure_photometry(ApertureImage image, const int32_t* segmap, const PhotometrySpec& spec,
                        const PhotometrySource& source, double* row) {
  if (spec.mask_neighbours && segmap != nullptr) {
    image.neighbours = segmap;
    image.neighbour_id = source.label;
    image.mirror_x = source.x;
    image.mirror_y = source.y;
  }
  const double x = source.x, y = source.y;
  if (!(std::isfinite(x) && std::isfinite(y) && std::isfinite(source.a) && std::isfinite(source.b) &&
        std::isfinite(source.theta))) {  // no ellipse (sum w <= 0): nothing to place an aperture with
    for (int k = 0; k < spec.stride(); ++k) row[k] = std::numeric_limits<double>::quiet_NaN();
    if (spec.auto_flux) row[spec.auto_offset() + 3] = 0.0;
    if (spec.windowed) row[spec.window_offset() + 2] = 0.0;
    return;
  }
  AutoFlux automatic;
  if (spec.needs_auto()) {
    AutoParams params;
    params.kron_factor = spec.kron_fact;
    params.min_radius = spec.min_diameter / 2.0;
    automatic = auto_flux(image, x, y, source.a, source.b, source.theta, params);
  }
  if (spec.auto_flux) {
    double* out = row + spec.auto_offset();
    out[0] = automatic.kron_radius;
    out[1] = automatic.flux;
    out[2] = automatic.flux_err;
    out[3] = automatic.flag;
  }
  for (int k = 0; k < spec.apertures; ++k) {
    const double r = spec.aperture_diameters[k] / 2.0;
    const ApertureSum sum = spec.aperture_bkgann
                                ? sum_circle_bkgann(image, x, y, r, spec.bkgann_rin, spec.bkgann_rout, 0)
                                : sum_circle(image, x, y, r, 0);
    row[spec.aperture_offset() + 2 * k] = sum.sum;
    row[spec.aperture_offset() + 2 * k + 1] = sum.error;
  }
  if (spec.fractions == 0 && !spec.windowed) return;
  // The fractions asked for, and 0.5 after them for the window's width.
  double fractions[kMaxFluxFractions + 1], radii[kMaxFluxFractions + 1];
  for (int k = 0; k < spec.fractions; ++k) fractions[k] = spec.flux_fractions[k];
  fractions[spec.fractions] = kHalfLight;
  const int count = spec.fractions + 1;
  flux_radius(image, x, y, kRadiusInA * source.a, {fractions, static_cast<size_t>(count)}, automatic.flux,
              kRadiusSubpix, {radii, static_cast<size_t>(count)});
  for (int k = 0; k < spec.fractions; ++k) row[spec.radius_offset() + k] = radii[k];
  if (spec.windowed) {
    const WindowedPosition win = winpos(image, x, y, kSigPerRadius * radii[spec.fractions]);
    double* out = row + spec.window_offset();
    out[0] = win.x;
    out[1] = win.y;
    out[2] = win.flag;
  }
}

}  // namespace imflow::kernels
