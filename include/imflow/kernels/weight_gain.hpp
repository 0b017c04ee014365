// SExtractor's WEIGHT_GAIN (input.weight.gain): with a weight map and a gain, a pixel's Poisson
// term is value / gain x its variance / backsig^2 (backsig: the image's global background RMS),
// summed over the pixels SExtractor's photom.c visits, in place of the sum's flux / gain: the AUTO
// ellipse's (computeautoflux) and every pixel within r + 0.75 of an aperture's centre
// (computeaperflux: not weighed by its overlap). Host and device.
#pragma once
#include <cmath>

#include "imflow/kernels/aperture.hpp"
#include "imflow/kernels/aperture_pixels.hpp"
#include "imflow/kernels/pixel_team.hpp"

namespace imflow::kernels {

// One pixel's term: value > 0 (and gain > 0) only, as SExtractor's `pix > 0.0 && gain > 0.0`.
IMFLOW_HOST_DEVICE inline double weight_gain_term(double value, double variance, double gain, double backnoise2) {
  return value > 0.0 && gain > 0.0 ? value / gain * variance / backnoise2 : 0.0;
}

namespace weight_gain_detail {
// The terms of the pixels of `box` that `inside(ix, iy)` accepts, each read as the sums read it
// (another object's pixel: its symmetric one, with mask_neighbours); masked pixels add none (the
// sums scale their variance by area / unmasked area instead).
template <typename Team, typename Inside>
IMFLOW_HOST_DEVICE inline double poisson_sum(const ApertureImage& image, const PixelBox& box,
                                             double backnoise2, Inside inside) {
  const aperture_detail::PixelNoise noise(image);
  double sum = 0.0;
  for_box_pixels<Team>(box, [&](int64_t ix, int64_t iy) {
    if (!inside(ix, iy)) return;
    const int64_t at = iy * image.data.width + ix;
    if (image.masked(at)) return;
    const aperture_detail::ReadPixel pixel = aperture_detail::read_pixel(image, ix, iy, at);
    sum += weight_gain_term(pixel.value, noise.variance(pixel.noise_at), image.gain, backnoise2);
  });
  return Team::sum(sum);
}
}  // namespace weight_gain_detail

// computeaperflux's: the box from (int)(x - r + 0.499999) to (int)(x + r + 1.499999), the pixels
// closer than r + 0.75 to (x, y); with `sextractor_arithmetic` all of it in float32, as there
// (sum_circle_sextractor's centre and bounds).
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE inline double weight_gain_circle(const ApertureImage& image, double x, double y, double r,
                                                    double backnoise2, bool sextractor_arithmetic = false) {
  if (sextractor_arithmetic) {
    const aperture_detail::SextractorCircle c = aperture_detail::make_sextractor_circle(x, y, r, 1);
    int32_t flag = 0;
    const PixelBox box = aperture_detail::sextractor_circle_box(c, image.data.width, image.data.height, flag);
    return weight_gain_detail::poisson_sum<Team>(image, box, backnoise2, [c](int64_t ix, int64_t iy) {
      const float dx = static_cast<float>(ix) - c.mx, dy = static_cast<float>(iy) - c.my;
      return dx * dx + dy * dy < c.rextlim2;
    });
  }
  PixelBox box{static_cast<int64_t>(x - r + 0.499999), static_cast<int64_t>(x + r + 1.499999),
               static_cast<int64_t>(y - r + 0.499999), static_cast<int64_t>(y + r + 1.499999)};
  box.xmin = box.xmin < 0 ? 0 : box.xmin;
  box.ymin = box.ymin < 0 ? 0 : box.ymin;
  box.xmax = box.xmax > image.data.width ? image.data.width : box.xmax;
  box.ymax = box.ymax > image.data.height ? image.data.height : box.ymax;
  const double reach2 = (r + 0.75) * (r + 0.75);
  return weight_gain_detail::poisson_sum<Team>(image, box, backnoise2, [=](int64_t ix, int64_t iy) {
    const double dx = static_cast<double>(ix) - x, dy = static_cast<double>(iy) - y;
    return dx * dx + dy * dy < reach2;
  });
}

// The AUTO aperture auto_flux measured with `kron_radius` (its output): the ellipse (a, b, theta)
// at kron_fact x kron_radius, or the circle of radius min_radius, the pixels whose centre is inside.
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE inline double weight_gain_auto(const ApertureImage& image, double x, double y, double a, double b,
                                                  double theta, const AutoParams& params, double kron_radius,
                                                  double backnoise2) {
  int32_t flag = 0;
  const EllipseCoeffs e = ellipse_coeffs(a, b, theta);
  if (params.sextractor_arithmetic) {  // auto_flux_sextractor's pixels
    const auto kronfactor = static_cast<float>(params.kron_factor * kron_radius);
    const aperture_detail::SextractorAutoAperture aperture = aperture_detail::sextractor_auto_aperture(
        x, y, a, b, e, params, kronfactor, image.data.width, image.data.height, flag);
    const aperture_detail::FloatEllipse shape = aperture.shape;
    return weight_gain_detail::poisson_sum<Team>(image, aperture.box, backnoise2,
                                                 [shape](int64_t ix, int64_t iy) { return shape.at(ix, iy) <= shape.klim2; });
  }
  if (kron_radius * std::sqrt(a * b) < params.min_radius) {
    const double r = params.min_radius, r2 = r * r;
    const PixelBox box = aperture_box(x, y, r, r, image.data.width, image.data.height, flag);
    return weight_gain_detail::poisson_sum<Team>(image, box, backnoise2, [=](int64_t ix, int64_t iy) {
      const double dx = static_cast<double>(ix) - x, dy = static_cast<double>(iy) - y;
      return dx * dx + dy * dy < r2;
    });
  }
  const double r = params.kron_factor * kron_radius, r2 = r * r;
  const PixelBox box = ellipse_box(x, y, e, r, image.data.width, image.data.height, flag);
  return weight_gain_detail::poisson_sum<Team>(image, box, backnoise2, [=](int64_t ix, int64_t iy) {
    const double dx = static_cast<double>(ix) - x, dy = static_cast<double>(iy) - y;
    return e.cxx * dx * dx + e.cyy * dy * dy + e.cxy * dx * dy < r2;
  });
}

// An AUTO or aperture error (sqrt(variances + flux / gain)) with its flux / gain replaced by the
// per-pixel terms (weight_gain_auto, weight_gain_circle), as measure_photometry applies them.
IMFLOW_HOST_DEVICE inline double weight_gain_error(double flux, double error, double gain, double terms) {
  const double variance = error * error - (flux > 0.0 ? flux / gain : 0.0);
  return std::sqrt((variance > 0.0 ? variance : 0.0) + terms);
}

}  // namespace imflow::kernels
