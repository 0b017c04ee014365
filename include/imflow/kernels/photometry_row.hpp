// One source's photometry row (kernels::measure_photometry): SEP 1.4.1's documented recipes for
// FLUX_AUTO, aperture fluxes, FLUX_RADIUS and XWIN/YWIN, chained as its docs chain them, then
// SExtractor's windowed errors and flags (winpos.c) and its VIGNET stamp (copyimage, image.c).
// Host and device (cuda/photometry.cu); included by photometry.hpp.
#pragma once
#include <cmath>
#include <limits>

#include "imflow/kernels/photometry.hpp"
#include "imflow/kernels/source_shape.hpp"
#include "imflow/kernels/weight_gain.hpp"

namespace imflow::kernels {

namespace photometry_detail {
inline constexpr double kHalfLight = 0.5;
inline constexpr double kRadiusInA = 6.0;         // flux_radius's rmax = 6 a
inline constexpr int kRadiusSubpix = 5;
inline constexpr double kSigPerRadius = 2.0 / 2.35;  // winpos's sig = 2 / 2.35 x flux_radius(0.5)
inline constexpr double kBig = 1e30;                 // SExtractor's BIG: SNR_WIN without noise
inline constexpr double kSingularDet = 0.00694, kSingularTerm = 0.0833333;  // SExtractor's singular moments

// SExtractor's FLAGS_WIN: 8 the window's centroid left the isophote (more than 1 px on both axes
// and outside the 1-sigma ellipse), 4 non-positive windowed flux (or NaN: no window, the object's
// own moments being undefined), 2 a negative windowed variance, 1 negative windowed determinant.
IMFLOW_HOST_DEVICE inline int32_t sextractor_win_flags(const WindowedPosition& win, const PhotometrySource& source) {
  const EllipseCoeffs c = ellipse_coeffs(source.a, source.b, source.theta);
  const double dx = win.x - source.x, dy = win.y - source.y;
  const bool escaped = dx * dx > 1.0 && dy * dy > 1.0 && c.cxx * dx * dx + c.cyy * dy * dy + c.cxy * dx * dy > 1.0;
  return (escaped ? 8 : 0) | (!(win.flux > 0.0) ? 4 : 0) | (win.x2 < 0.0 || win.y2 < 0.0 ? 2 : 0) |
         (win.x2 * win.y2 - win.xy * win.xy < 0.0 ? 1 : 0);
}

// The windowed block after the position (photometry_spec.hpp's WindowValue), as compute_winpos
// ends: with FLAGS_WIN set the moments and position errors are the isophotal ones.
IMFLOW_HOST_DEVICE inline void windowed_columns(const WindowedPosition& win, const PhotometrySource& source,
                                                double* out) {
  const int32_t flags = sextractor_win_flags(win, source);
  out[kWinFlags] = win.flag | flags;
  out[kWinFlux] = win.flux;
  out[kWinFluxErr] = std::sqrt(win.flux_var);
  out[kWinSnr] = win.flux_var > 1.0 / kBig ? win.flux / std::sqrt(win.flux_var) : kBig;
  double x2 = source.x2, y2 = source.y2, xy = source.xy;
  double errx2 = source.errx2, erry2 = source.erry2, errxy = source.errxy;
  if (flags == 0) {
    x2 = win.x2, y2 = win.y2, xy = win.xy;
    if (x2 * y2 - xy * xy < kSingularDet) {
      x2 += kSingularTerm;
      y2 += kSingularTerm;
    }
    errx2 = win.errx2, erry2 = win.erry2, errxy = win.errxy;
    if (source.singular && errx2 * erry2 - errxy * errxy < win.errsum * win.errsum) {
      errx2 += win.errsum;
      erry2 += win.errsum;
    }
  }
  out[kWinX2] = x2;
  out[kWinY2] = y2;
  out[kWinXY] = xy;
  out[kWinErrX2] = errx2;
  out[kWinErrY2] = erry2;
  out[kWinErrXY] = errxy;
  const EllipseAxes axes = ellipse_axes(errx2, erry2, errxy);
  out[kWinErrA] = axes.a;
  out[kWinErrB] = axes.b;
  out[kWinErrTheta] = axes.theta;
}
}  // namespace photometry_detail

template <typename Team>
IMFLOW_HOST_DEVICE inline void copy_vignet(const ApertureImage& image, const int32_t* segmap, int32_t label, double x,
                                           double y, int width, int height, float* out) {
  constexpr float kOutside = -1e30f;  // SExtractor's -BIG
  const int64_t count = int64_t{width} * height;
  const bool finite = std::isfinite(x) && std::isfinite(y);
  const auto ix = finite ? static_cast<int64_t>(x + 0.49999) : -1;  // C's truncation
  const auto iy = finite ? static_cast<int64_t>(y + 0.49999) : -1;
  const bool placed = ix >= 0 && iy >= 0 && ix < image.data.width && iy < image.data.height;
  const int64_t x0 = ix - width / 2, y0 = iy - height / 2;
  for (int64_t k = Team::rank(); k < count; k += Team::size) {
    float value = kOutside;
    const int64_t px = x0 + k % width, py = y0 + k / width;
    if (placed && px >= 0 && py >= 0 && px < image.data.width && py < image.data.height) {
      const int64_t at = py * image.data.width + px;
      if (!image.masked(at) && !blanked_pixel(segmap, image.detected, label, at)) value = image.data.data[at];
    }
    out[k] = value;
  }
}

template <typename Team>
IMFLOW_HOST_DEVICE inline void measure_photometry(ApertureImage image, const int32_t* segmap,
                                                  const PhotometrySpec& spec, const PhotometrySource& source,
                                                  double* row, float* vignet, double weight_gain_noise2,
                                                  const ApertureImage* kron_image) {
  using namespace photometry_detail;
  if (vignet != nullptr && spec.vignet_size() > 0) {
    copy_vignet<Team>(image, spec.mask_neighbours ? segmap : nullptr, source.label, source.x, source.y, spec.vignet_width,
                spec.vignet_height, vignet);
  }
  if (spec.mask_neighbours && segmap != nullptr) {
    image.neighbours = segmap;
    image.neighbour_id = source.label;
    image.mirror_x = source.x;
    image.mirror_y = source.y;
  }
  const double x = source.x, y = source.y;
  // No centre (sum w <= 0): nothing to place an aperture at. No ellipse (moments that stay
  // indefinite after the singular term, possible when the measured pixels are not those the
  // segment was detected on): the circular apertures only, the rest NaN.
  const bool centred = std::isfinite(x) && std::isfinite(y);
  const bool ellipse = centred && std::isfinite(source.a) && std::isfinite(source.b) && std::isfinite(source.theta);
  if (!ellipse) {
    for (int k = 0; k < spec.stride(); ++k) row[k] = std::numeric_limits<double>::quiet_NaN();
    if (spec.auto_flux) row[spec.auto_offset() + 3] = 0.0;
    if (spec.windowed) row[spec.window_offset() + kWinFlags] = 4.0;  // no window: FLUX_WIN not positive
    if (spec.measures()) row[spec.flags_offset()] = 0.0;
    if (!centred) return;
  }
  int32_t flags = 0;  // every measurement's aperture flags
  const bool weight_gain = weight_gain_noise2 > 0.0 && image.gain > 0.0;
  AutoFlux automatic;
  AutoParams params;
  params.kron_factor = spec.kron_fact;
  params.min_radius = spec.min_diameter / 2.0;
  params.min_kron_radius = spec.min_kron_radius;
  params.sextractor_arithmetic = spec.sextractor_arithmetic;
  if (spec.needs_auto() && ellipse) {
    if (kron_image == nullptr) {
      automatic = auto_flux<Team>(image, x, y, source.a, source.b, source.theta, params);
    } else {
      ApertureImage detection = *kron_image;  // with the measured image's neighbours
      detection.neighbours = image.neighbours;
      detection.detected = image.detected;
      detection.neighbour_id = image.neighbour_id;
      detection.mirror_x = image.mirror_x;
      detection.mirror_y = image.mirror_y;
      automatic = auto_flux<Team>(image, x, y, source.a, source.b, source.theta, params, detection);
    }
    flags |= automatic.flag | (automatic.crowded ? kAutoCrowded : 0);
  }
  if (spec.auto_flux && ellipse) {
    double* out = row + spec.auto_offset();
    out[0] = automatic.kron_radius;
    out[1] = automatic.flux;
    out[2] = automatic.flux_err;
    if (weight_gain && std::isfinite(automatic.flux)) {
      const double terms = weight_gain_auto<Team>(image, x, y, source.a, source.b, source.theta, params,
                                                  automatic.kron_radius, weight_gain_noise2);
      out[2] = weight_gain_error(automatic.flux, automatic.flux_err, image.gain, terms);
    }
    out[3] = automatic.flag | (automatic.crowded ? kAutoCrowded : 0);
  }
  for (int k = 0; k < spec.apertures; ++k) {
    const double r = spec.aperture_diameters[k] / 2.0;
    const int subpix = spec.aperture_subpix;
    const ApertureSum sum = spec.aperture_bkgann
                                ? sum_circle_bkgann<Team>(image, x, y, r, spec.bkgann_rin, spec.bkgann_rout, subpix)
                                : (spec.sextractor_arithmetic && subpix > 0
                                       ? sum_circle_sextractor<Team>(image, x, y, r, subpix, MaskMode::correct)
                                       : sum_circle<Team>(image, x, y, r, subpix));
    row[spec.aperture_offset() + 2 * k] = sum.sum;
    row[spec.aperture_offset() + 2 * k + 1] = sum.error;
    if (weight_gain && !spec.aperture_bkgann && std::isfinite(sum.sum)) {
      const double terms = weight_gain_circle<Team>(image, x, y, r, weight_gain_noise2, spec.sextractor_arithmetic);
      row[spec.aperture_offset() + 2 * k + 1] = weight_gain_error(sum.sum, sum.error, image.gain, terms);
    }
    flags |= sum.flag;
  }
  if (!ellipse || (spec.fractions == 0 && !spec.windowed)) {
    if (spec.measures()) row[spec.flags_offset()] = flags;
    return;
  }
  // The fractions asked for (0..kMaxFluxFractions, which the compiler cannot know), and 0.5 after
  // them for the window's width.
  const int asked = spec.fractions < 0 ? 0 : (spec.fractions > kMaxFluxFractions ? kMaxFluxFractions : spec.fractions);
  double fractions[kMaxFluxFractions + 1], radii[kMaxFluxFractions + 1];
  for (int k = 0; k < asked; ++k) fractions[k] = spec.flux_fractions[k];
  fractions[asked] = kHalfLight;
  const auto count = static_cast<size_t>(asked) + 1;
  flags |= flux_radius<Team>(image, x, y, kRadiusInA * source.a, {fractions, count}, automatic.flux, kRadiusSubpix,
                       {radii, count});
  for (int k = 0; k < asked; ++k) row[spec.radius_offset() + k] = radii[k];
  if (spec.windowed) {
    const WindowedPosition win = winpos<Team>(image, x, y, kSigPerRadius * radii[asked], 11, kWinposMinSig,
                                              weight_gain ? weight_gain_noise2 : 0.0);
    double* out = row + spec.window_offset();
    out[kWinX] = win.x;
    out[kWinY] = win.y;
    windowed_columns(win, source, out);
    flags |= win.flag;
  }
  row[spec.flags_offset()] = flags;
}

}  // namespace imflow::kernels
