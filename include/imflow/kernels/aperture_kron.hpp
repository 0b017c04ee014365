// The Kron radius (sep.kron_radius, SExtractor's KRON_RADIUS) and SEP's documented FLUX_AUTO
// recipe built on it (SExtractor's FLUX_AUTO with PHOT_AUTOPARAMS 2.5, 3.5). Host and device;
// included by aperture.hpp.
#pragma once
#include <cmath>

#include "imflow/kernels/aperture.hpp"
#include "imflow/kernels/aperture_pixels.hpp"

namespace imflow::kernels {

namespace aperture_detail {
// The Kron radius's loop over `box`: sum r I / sum I over the pixels whose scaled squared radius
// q = rpix2(ix, iy) is <= r2 (NaN outside), r = sqrt(q).
template <typename Team, typename Radius2>
IMFLOW_HOST_DEVICE inline KronRadius kron_sums(const ApertureImage& image, const PixelBox& box, double r2,
                                               KronRadius out, Radius2 rpix2) {
  constexpr float kBig = 1e30f;  // SEP's BIG: values below -BIG are invalid
  double r1 = 0.0, v1 = 0.0;
  int64_t area = 0;
  for_box_pixels<Team>(box, [&](int64_t ix, int64_t iy) {
    const double q = rpix2(ix, iy);
    if (!(q <= r2)) return;  // NaN (a degenerate ellipse's infinite coefficients) is outside, as in SEP
    const int64_t at = iy * image.data.width + ix;
    ++out.pixels;
    if (other_object(image, at)) {
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
  out.r1 = r1;
  out.v1 = v1;
  if (area == 0) {
    out.flag |= kAperAllMasked;
  } else if (r1 <= 0.0 || v1 <= 0.0) {
    out.flag |= kAperNonPositive;
  } else {
    out.radius = r1 / v1;
  }
  return out;
}

// SExtractor 2.25's arithmetic in computeautoflux (photom.c): the centre (float mx, my), the
// coefficients (objstruct's float cxx, cyy, cxy), the offsets dx = x - mx and
// r2 = cx2 dx dx + cy2 dy dy + cxy dx dy all float, left to right (no FMA: photometry.cu is built
// with --fmad=false); the pixel is in where r2 <= klim2 (float). Pixel centres only, no subpixels.
struct FloatEllipse {
  float mx, my, cxx, cyy, cxy, klim2;
  IMFLOW_HOST_DEVICE float at(int64_t ix, int64_t iy) const {
    const float dx = static_cast<float>(ix) - mx, dy = static_cast<float>(iy) - my;
    return cxx * dx * dx + cyy * dy * dy + cxy * dx * dy;
  }
};
// sum_aperture's pixel test for it: every pixel wholly in or out.
IMFLOW_HOST_DEVICE inline bool pixel_overlap(const FloatEllipse& shape, double, double, int64_t ix, int64_t iy, int,
                                             double& overlap) {
  overlap = 1.0;
  return shape.at(ix, iy) <= shape.klim2;
}
IMFLOW_HOST_DEVICE inline FloatEllipse float_ellipse(double x, double y, const EllipseCoeffs& e, float klim2) {
  return {static_cast<float>(x), static_cast<float>(y), static_cast<float>(e.cxx), static_cast<float>(e.cyy),
          static_cast<float>(e.cxy), klim2};
}
}  // namespace aperture_detail

template <typename Team>
IMFLOW_HOST_DEVICE inline KronRadius kron_radius(const ApertureImage& image, double x, double y, double cxx, double cyy,
                                                 double cxy, double r_max) {
  KronRadius out;
  const EllipseCoeffs e{cxx, cyy, cxy};
  const PixelBox box = ellipse_box(x, y, e, r_max, image.data.width, image.data.height, out.flag);
  return aperture_detail::kron_sums<Team>(image, box, r_max * r_max, out, [&](int64_t ix, int64_t iy) {
    const double dx = static_cast<double>(ix) - x, dy = static_cast<double>(iy) - y;
    return cxx * dx * dx + cyy * dy * dy + cxy * dx * dy;
  });
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

namespace aperture_detail {
// The pixels computeautoflux sums at Kron factor `kronfactor`: the ellipse of klim2 =
// kronfactor^2 (float) where kronfactor x sqrt(a b) > min_radius (PHOT_AUTOAPERS), else the circle
// of klim2 = min_radius^2 (float); the boxes (and so the truncation flag) are SEP's.
struct SextractorAutoAperture {
  PixelBox box;
  FloatEllipse shape;
  bool circular = false;
};
IMFLOW_HOST_DEVICE inline SextractorAutoAperture sextractor_auto_aperture(double x, double y, double a, double b,
                                                                          const EllipseCoeffs& e,
                                                                          const AutoParams& params, float kronfactor,
                                                                          int64_t width, int64_t height, int32_t& flag) {
  SextractorAutoAperture out;
  out.circular = !(static_cast<double>(kronfactor) * std::sqrt(a * b) > params.min_radius);
  if (out.circular) {
    const auto r = static_cast<float>(params.min_radius);
    out.box = aperture_box(x, y, params.min_radius, params.min_radius, width, height, flag);
    out.shape = float_ellipse(x, y, EllipseCoeffs{1.0, 1.0, 0.0}, r * r);
  } else {
    out.box = ellipse_box(x, y, e, static_cast<double>(kronfactor), width, height, flag);
    out.shape = float_ellipse(x, y, e, kronfactor * kronfactor);
  }
  return out;
}

// auto_flux with AutoParams::sextractor_arithmetic: computeautoflux's float arithmetic
// (FloatEllipse) in both loops. The Kron loop takes r2 <= KRON_NSIG^2 (36) and sums sqrt(r2) I;
// kronfactor = (float)(kron_factor x r1 / v1), raised to min_kron_radius (PHOT_AUTOPARAMS'
// second value) where below it; then sextractor_auto_aperture's pixels.
template <typename Team>
IMFLOW_HOST_DEVICE inline AutoFlux auto_flux_sextractor(const ApertureImage& image, double x, double y, double a,
                                                        double b, const EllipseCoeffs& e, const AutoParams& params,
                                                        const ApertureImage& kron_image) {
  AutoFlux out;
  KronRadius kron;
  const PixelBox kbox = ellipse_box(x, y, e, params.kron_r_max, image.data.width, image.data.height, kron.flag);
  const float rmax = static_cast<float>(params.kron_r_max);
  const FloatEllipse kshape = float_ellipse(x, y, e, rmax * rmax);
  kron = kron_sums<Team>(kron_image, kbox, static_cast<double>(kshape.klim2), kron,
                         [&kshape](int64_t ix, int64_t iy) { return static_cast<double>(kshape.at(ix, iy)); });
  // photom.c's (float)((autoparam[0] * r1) / v1); 0 with a flag (r1 or v1 not positive)
  float kronfactor = kron.radius > 0.0 ? static_cast<float>((params.kron_factor * kron.r1) / kron.v1) : 0.0f;
  if (kronfactor < params.min_kron_radius) kronfactor = static_cast<float>(params.min_kron_radius);
  out.kron_radius = static_cast<double>(kronfactor) / params.kron_factor;
  int32_t flag = 0;
  const SextractorAutoAperture aperture =
      sextractor_auto_aperture(x, y, a, b, e, params, kronfactor, image.data.width, image.data.height, flag);
  out.circular = aperture.circular;
  const ApertureSum sum = sum_aperture<Team>(image, x, y, aperture.shape, aperture.box, flag, 1, MaskMode::correct);
  out.flux = sum.sum;
  out.flux_err = sum.error;
  out.flag = out.circular ? sum.flag : (sum.flag | kron.flag);
  out.crowded = sextractor_crowded(kron, sum);
  return out;
}
}  // namespace aperture_detail

// The Kron radius is measured on `kron_image` (the same pixel grid): `image` itself, or in
// dual-image mode the detection image, as SExtractor's computeautoflux reads its dfield; the flux
// is summed on `image`.
template <typename Team>
IMFLOW_HOST_DEVICE inline AutoFlux auto_flux(const ApertureImage& image, double x, double y, double a, double b,
                                             double theta, const AutoParams& params, const ApertureImage& kron_image) {
  AutoFlux out;
  const EllipseCoeffs e = ellipse_coeffs(a, b, theta);
  if (params.sextractor_arithmetic) {
    return aperture_detail::auto_flux_sextractor<Team>(image, x, y, a, b, e, params, kron_image);
  }
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
