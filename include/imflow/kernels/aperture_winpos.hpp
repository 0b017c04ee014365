// Windowed positions (sep.winpos, SExtractor's XWIN_IMAGE/YWIN_IMAGE): the centroid iterated
// under a Gaussian window of width sig over the circle of radius 4 sig; SExtractor's windowed
// flux, moments and position errors from the last step's sums. Host and device; included by
// aperture.hpp.
#pragma once
#include <cmath>

#include "imflow/kernels/aperture.hpp"
#include "imflow/kernels/aperture_pixels.hpp"
#include "imflow/kernels/pixel_moments.hpp"
#include "imflow/kernels/pixel_team.hpp"

namespace imflow::kernels {
namespace aperture_detail {

inline constexpr int kMaxSteps = 16;
inline constexpr double kRadiusInSig = 4.0;
inline constexpr double kMinStep = 1e-4;    // px: smaller steps end the iteration
inline constexpr double kStepFactor = 2.0;  // the centroid offset is half the true offset for a Gaussian
inline constexpr double kPixelVariance = 0.0833;  // SExtractor's finite pixel size term in the errors

// One step's sums over the window (SExtractor's tv, dxpos, mx2.., esum, emx2..): `value` of each
// pixel's weight x value, e of its weight squared x variance; dx, dy about the step's start.
struct WindowSums {
  PixelMoments value;
  double e = 0.0, exx = 0.0, eyy = 0.0, exy = 0.0;
  double step_x = 0.0, step_y = 0.0;

  IMFLOW_HOST_DEVICE void add_error(double variance, double dx, double dy) {
    e += variance;
    exx += variance * (dx * dx + kPixelVariance);
    eyy += variance * (dy * dy + kPixelVariance);
    exy += variance * dx * dy;
  }
  // Every team member's partial sums combined (pixel_team.hpp).
  template <typename Team>
  IMFLOW_HOST_DEVICE void team_sum() {
    double sums[] = {value.s, value.sx, value.sy, value.sxx, value.syy, value.sxy, e, exx, eyy, exy};
    kernels::team_sum<Team>(sums, 10);
    value = {sums[0], sums[1], sums[2], sums[3], sums[4], sums[5]};
    e = sums[6], exx = sums[7], eyy = sums[8], exy = sums[9];
  }
  // Masked pixels' weights (`masked.value`) times the mean value they stand for.
  IMFLOW_HOST_DEVICE void add_masked(const WindowSums& masked, double mean) {
    const PixelMoments& m = masked.value;
    value.s += mean * m.s;
    value.sx += mean * m.sx;
    value.sy += mean * m.sy;
    value.sxx += mean * m.sxx;
    value.syy += mean * m.syy;
    value.sxy += mean * m.sxy;
  }
  // SExtractor's closing formulas (compute_winpos), before its flags and singular-case term.
  IMFLOW_HOST_DEVICE void finish(WindowedPosition& out) const {
    const double w = value.s;
    out.flux = w;
    out.flux_var = e;
    out.x2 = value.sxx / w - step_x * step_x;
    out.y2 = value.syy / w - step_y * step_y;
    out.xy = value.sxy / w - step_x * step_y;
    const double norm = kStepFactor * kStepFactor / (w * w);
    out.errx2 = exx * norm;
    out.erry2 = eyy * norm;
    out.errxy = exy * norm;
    out.errsum = e * 0.08333 * norm;
  }
};

}  // namespace aperture_detail

template <typename Team>
IMFLOW_HOST_DEVICE inline WindowedPosition winpos(const ApertureImage& image, double x, double y, double sig,
                                                  int subpix, double min_sig, double weight_gain_noise2) {
  using namespace aperture_detail;
  WindowedPosition out{x, y, 0, 0};
  if (sig < min_sig) sig = min_sig;
  if (!(sig >= 0.0) || subpix < 0) return out;
  const double inv_two_sig2 = 1.0 / (2.0 * sig * sig);
  const double r = kRadiusInSig * sig, r2 = r * r;
  const BoundaryBand band = boundary_band(r);
  const PixelNoise noise(image);
  const double inv_gain = image.gain > 0.0 ? 1.0 / image.gain : 0.0;
  aperture_detail::WindowSums sums;
  int step = 0;
  for (; step < kMaxSteps; ++step) {
    const PixelBox box = aperture_box(x, y, r, r, image.data.width, image.data.height, out.flag);
    double tv = 0.0, totarea = 0.0, maskarea = 0.0;
    aperture_detail::WindowSums kept,
        masked;  // the unmasked pixels' sums; the masked pixels' weights (x their mean after)
    for_box_pixels<Team>(box, [&](int64_t ix, int64_t iy) {
      const double dx = static_cast<double>(ix) - x, dy = static_cast<double>(iy) - y;
      const double rpix2 = dx * dx + dy * dy;
      if (!(rpix2 < band.outer2)) return;
      double overlap = 1.0;
      if (rpix2 > band.inner2) {
        if (subpix == 0) {
          overlap = circle_overlap(dx - 0.5, dy - 0.5, dx + 0.5, dy + 0.5, r);
        } else {
          overlap = subsampled_overlap(dx, dy, subpix,
                                       [r2](double sx, double, double sy2) { return sx * sx + sy2 < r2; });
        }
      }
      const double window = std::exp(-rpix2 * inv_two_sig2), weight = overlap * window;
      const int64_t at = iy * image.data.width + ix;
      if (image.mask != nullptr && image.mask[at] > image.mask_threshold) {
        out.flag |= kAperHasMasked;
        maskarea += overlap;
        masked.value.add(weight, dx, dy);
        // A weight map's bad pixel (infinite variance) adds none, as SExtractor's compute_winpos
        // zeroes the variance of a bad pixel it cannot replace.
        const double variance = noise.variance(at);
        kept.add_error(std::isfinite(variance) ? weight * weight * variance : 0.0, dx, dy);
      } else {
        const ReadPixel pixel = image.neighbours == nullptr ? ReadPixel{image.data.data[at], at}
                                                            : read_pixel(image, ix, iy, at);
        const double pix = pixel.value;
        tv += pix * overlap;
        kept.value.add(pix * overlap * window, dx, dy);  // SEP's order of the products
        const double variance = noise.variance(pixel.noise_at);
        double poisson = pix > 0.0 ? pix * inv_gain : 0.0;
        if (weight_gain_noise2 > 0.0) poisson = poisson * variance / weight_gain_noise2;  // SExtractor's order
        const double var = variance + poisson;
        kept.add_error(weight * weight * var, dx, dy);
      }
      totarea += overlap;
    });
    kept.team_sum<Team>();
    out.flag = Team::bit_or(out.flag);
    if (image.mask != nullptr) {
      masked.team_sum<Team>();
      double areas[] = {tv, totarea, maskarea};
      team_sum<Team>(areas, 3);
      tv = areas[0], totarea = areas[1], maskarea = areas[2];
    }
    if (image.mask != nullptr) kept.add_masked(masked, tv / (totarea - maskarea));  // masked pixels take the mean
    sums = kept;
    if (!(sums.value.s > 0.0)) break;
    sums.step_x = sums.value.sx / sums.value.s;
    sums.step_y = sums.value.sy / sums.value.s;
    x += sums.step_x * kStepFactor;
    y += sums.step_y * kStepFactor;
    if (sums.step_x * sums.step_x + sums.step_y * sums.step_y < kMinStep * kMinStep) break;
  }
  out.x = x;
  out.y = y;
  out.iterations = step + 1;
  sums.finish(out);
  return out;
}

}  // namespace imflow::kernels
