// The radius holding a fraction of the flux (sep.flux_radius, SExtractor's FLUX_RADIUS): sums in
// 64 concentric annuli out to rmax, cumulated and inverted by linear interpolation. Host and
// device; included by aperture.hpp.
#pragma once
#include <array>
#include <cmath>

#include "imflow/kernels/aperture.hpp"
#include "imflow/kernels/aperture_pixels.hpp"

namespace imflow::kernels {
namespace aperture_detail {

inline constexpr int64_t kAnnuli = 64;

// The radius where the cumulative sums (annulus i ends at (i + 1) step) first reach `target`.
IMFLOW_HOST_DEVICE inline double invert_cumulative(double rmax, const std::array<double, kAnnuli>& cumulative,
                                                   double target) {
  const double step = rmax / kAnnuli;
  int64_t i = 0;
  while (i < kAnnuli && cumulative[i] < target) ++i;
  if (i == 0) {
    if (target <= 0.0 || cumulative[0] == 0.0) return 0.0;
    return step * target / cumulative[0];
  }
  if (i == kAnnuli) return rmax;
  return step * (static_cast<double>(i) + (target - cumulative[i - 1]) / (cumulative[i] - cumulative[i - 1]));
}

}  // namespace aperture_detail

template <typename Team>
IMFLOW_HOST_DEVICE inline int32_t flux_radius(const ApertureImage& image, double x, double y, double rmax,
                                              std::span<const double> fractions, double normflux, int subpix,
                                              std::span<double> radii) {
  using namespace aperture_detail;
  int32_t flag = 0;
  if (!(rmax > 0.0) || subpix < 1) {
    for (size_t k = 0; k < fractions.size() && k < radii.size(); ++k) radii[k] = 0.0;
    return flag;
  }
  std::array<double, kAnnuli> sum{}, area{}, maskarea{};
  const double scale = 1.0 / subpix, scale2 = scale * scale, offset = 0.5 * (scale - 1.0);
  const double r_out = rmax + 1.5;  // margin for the interpolation
  const double r_out2 = r_out * r_out;
  const double step = rmax / kAnnuli, stepdens = 1.0 / step;
  // Pixels whose centre lies within half a diagonal of an annulus boundary are subsampled.
  const double near_previous = 0.7072, near_next = step - 0.7072;
  const PixelBox box = aperture_box(x, y, r_out, r_out, image.data.width, image.data.height, flag);
  const bool corrected = image.mask != nullptr;  // the areas are needed for the masked area's correction
  for_box_pixels<Team>(box, [&](int64_t ix, int64_t iy) {
    const double dx = static_cast<double>(ix) - x, dy = static_cast<double>(iy) - y;
    const double rpix2 = dx * dx + dy * dy;
    if (!(rpix2 < r_out2)) return;
    const int64_t at = iy * image.data.width + ix;
    const float pix = image.neighbours == nullptr ? image.data.data[at] : read_pixel(image, ix, iy, at).value;
    const bool masked = image.masked(at);
    if (masked) flag |= kAperHasMasked;
    auto add = [&](int64_t j, double weight) {
      if (j >= kAnnuli) return;
      if (masked) {
        maskarea[j] += weight;
      } else {
        sum[j] += weight * pix;
      }
      if (corrected) area[j] += weight;
    };
    const double rpix = std::sqrt(rpix2);
    const double d = std::fmod(rpix, step);
    if (d < near_previous || d > near_next) {
      double sy = dy + offset;
      for (int j = 0; j < subpix; ++j, sy += scale) {
        double sx = dx + offset;
        const double sy2 = sy * sy;
        for (int i = 0; i < subpix; ++i, sx += scale) {
          add(static_cast<int64_t>(std::sqrt(sx * sx + sy2) * stepdens), scale2);
        }
      }
    } else {
      add(static_cast<int64_t>(rpix * stepdens), 1.0);
    }
  });
  team_sum<Team>(sum.data(), kAnnuli);
  flag = Team::bit_or(flag);
  if (corrected) {  // masked area takes the annulus's mean
    team_sum<Team>(area.data(), kAnnuli);
    team_sum<Team>(maskarea.data(), kAnnuli);
    for (int64_t j = 0; j < kAnnuli; ++j) {
      sum[j] *= area[j] == maskarea[j] ? 0.0 : area[j] / (area[j] - maskarea[j]);
    }
  }
  for (int64_t j = 1; j < kAnnuli; ++j) sum[j] += sum[j - 1];
  const double total = std::isnan(normflux) ? sum[kAnnuli - 1] : normflux;
  for (size_t k = 0; k < fractions.size() && k < radii.size(); ++k) {
    radii[k] = invert_cumulative(rmax, sum, fractions[k] * total);
  }
  return flag;
}

}  // namespace imflow::kernels
