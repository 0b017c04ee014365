// The Kron radius (sep.kron_radius, SExtractor's KRON_RADIUS) and SEP's documented FLUX_AUTO
// recipe built on it (SExtractor's FLUX_AUTO with PHOT_AUTOPARAMS 2.5, 3.5). Host and device;
// included by aperture.hpp.
#pragma once
#include <cmath>

#include "imflow/kernels/aperture.hpp"
#include "imflow/kernels/aperture_pixels.hpp"

namespace imflow::kernels {

template <typename Team>
IMFLOW_HOST_DEVICE inline KronRadius kron_radius(const ApertureImage& image, double x, double y, double cxx, double cyy,
                                                 double cxy, double r_max) {
  constexpr float kBig = 1e30f;  // SEP's BIG: values below -BIG are invalid
  KronRadius out;
  const EllipseCoeffs e{cxx, cyy, cxy};
  const PixelBox box = ellipse_box(x, y, e, r_max, image.data.width, image.data.height, out.flag);
  const double r2 = r_max * r_max;
  double r1 = 0.0, v1 = 0.0;
  int64_t area = 0;
  for_box_pixels<Team>(box, [&](int64_t ix, int64_t iy) {
    const double dx = static_cast<double>(ix) - x, dy = static_cast<double>(iy) - y;
    const double q = cxx * dx * dx + cyy * dy * dy + cxy * dx * dy;
    if (!(q <= r2)) return;  // NaN (a degenerate ellipse's infinite coefficients) is outside, as in SEP
    const int64_t at = iy * image.data.width + ix;
    ++out.pixels;
    if (aperture_detail::other_object(image, at)) {
      ++out.blanked;
      return;
    }
    const float pix = image.data.data[at];
    if (pix < -kBig || image.masked(at)) {
      out.flag |= kAperHasMasked;
      ++out.blanked;
      return;
    }
    r1 += std::sqrt(q) * pix;
    v1 += pix;
    ++area;
  });
  r1 = Team::sum(r1);
  v1 = Team::sum(v1);
  area = Team::sum(area);
  out.pixels = Team::sum(out.pixels);
  out.blanked = Team::sum(out.blanked);
  out.flag = Team::bit_or(out.flag);
  if (area == 0) {
    out.flag |= kAperAllMasked;
  } else if (r1 <= 0.0 || v1 <= 0.0) {
    out.flag |= kAperNonPositive;
  } else {
    out.radius = r1 / v1;
  }
  return out;
}

namespace aperture_detail {
inline constexpr double kCrowdThreshold = 0.1;  // SExtractor's CROWD_THRESHOLD (photom.h)
}  // namespace aperture_detail

// SExtractor's OBJ_CROWDED test in computeautoflux: (float)areab / area > 0.1 over the Kron
// radius's pixels, or (float)areab > 0.1 x area over the flux's; nothing when the first step had
// no pixel (SExtractor then measures nothing).
IMFLOW_HOST_DEVICE inline bool sextractor_crowded(const KronRadius& kron, const ApertureSum& sum) {
  using aperture_detail::kCrowdThreshold;
  if (kron.pixels == 0) return false;
  const float share = static_cast<float>(kron.blanked) / static_cast<float>(kron.pixels);
  return share > kCrowdThreshold ||
         static_cast<double>(static_cast<float>(sum.blanked_area)) > kCrowdThreshold * sum.area;
}

// The Kron radius is measured on `kron_image` (the same pixel grid): `image` itself, or in
// dual-image mode the detection image, as SExtractor's computeautoflux reads its dfield; the flux
// is summed on `image`.
template <typename Team>
IMFLOW_HOST_DEVICE inline AutoFlux auto_flux(const ApertureImage& image, double x, double y, double a, double b,
                                             double theta, const AutoParams& params, const ApertureImage& kron_image) {
  AutoFlux out;
  const EllipseCoeffs e = ellipse_coeffs(a, b, theta);
  const KronRadius kron = kron_radius<Team>(kron_image, x, y, e.cxx, e.cyy, e.cxy, params.kron_r_max);
  // SExtractor's PHOT_AUTOPARAMS minimum: the scaled radius is at least min_kron_radius.
  const bool raised = params.kron_factor * kron.radius < params.min_kron_radius;
  out.kron_radius = raised ? params.min_kron_radius / params.kron_factor : kron.radius;
  out.circular = out.kron_radius * std::sqrt(a * b) < params.min_radius;
  const ApertureSum sum = out.circular
                              ? sum_circle<Team>(image, x, y, params.min_radius, 1)
                              : sum_ellipse<Team>(image, x, y, a, b, theta, params.kron_factor * out.kron_radius, 1);
  out.flux = sum.sum;
  out.flux_err = sum.error;
  out.flag = out.circular ? sum.flag : (sum.flag | kron.flag);
  out.crowded = sextractor_crowded(kron, sum);
  return out;
}

template <typename Team>
IMFLOW_HOST_DEVICE inline AutoFlux auto_flux(const ApertureImage& image, double x, double y, double a, double b,
                                             double theta, const AutoParams& params) {
  return auto_flux<Team>(image, x, y, a, b, theta, params, image);
}

}  // namespace imflow::kernels
