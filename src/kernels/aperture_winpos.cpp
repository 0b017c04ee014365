// Windowed positions (sep.winpos, SExtractor's XWIN_IMAGE/YWIN_IMAGE): the centroid iterated
// under a Gaussian window of width sig over the circle of radius 4 sig.
#include <cmath>

#include "imflow/kernels/aperture.hpp"
#include "aperture_internal.hpp"

namespace imflow::kernels {
namespace {

constexpr int kMaxSteps = 16;
constexpr double kRadiusInSig = 4.0;
constexpr double kMinStep = 1e-4;    // px: smaller steps end the iteration
constexpr double kStepFactor = 2.0;  // the centroid offset is half the true offset for a Gaussian

}  // namespace

WindowedPosition winpos(const ApertureImage& image, double x, double y, double sig, int subpix, double min_sig) {
  WindowedPosition out{x, y, 0, 0};
  if (sig < min_sig) sig = min_sig;
  if (!(sig >= 0.0) || subpix < 0) return out;
  const double inv_two_sig2 = 1.0 / (2.0 * sig * sig);
  const double r = kRadiusInSig * sig, r2 = r * r;
  const BoundaryBand band = boundary_band(r);
  int step = 0;
  for (; step < kMaxSteps; ++step) {
    const PixelBox box = aperture_box(x, y, r, r, image.data.width, image.data.height, out.flag);
    double tv = 0.0, twv = 0.0, totarea = 0.0, dxpos = 0.0, dypos = 0.0;
    double maskarea = 0.0, maskweight = 0.0, maskdx = 0.0, maskdy = 0.0;
    for (int64_t iy = box.ymin; iy < box.ymax; ++iy) {
      const int64_t row = iy * image.data.width;
      for (int64_t ix = box.xmin; ix < box.xmax; ++ix) {
        const double dx = static_cast<double>(ix) - x, dy = static_cast<double>(iy) - y;
        const double rpix2 = dx * dx + dy * dy;
        if (!(rpix2 < band.outer2)) continue;
        double overlap = 1.0;
        if (rpix2 > band.inner2) {
          if (subpix == 0) {
            overlap = circle_overlap(dx - 0.5, dy - 0.5, dx + 0.5, dy + 0.5, r);
          } else {
            overlap = subsampled_overlap(dx, dy, subpix,
                                         [r2](double sx, double, double sy2) { return sx * sx + sy2 < r2; });
          }
        }
        const double weight = std::exp(-rpix2 * inv_two_sig2);
        const int64_t at = row + ix;
        if (image.mask != nullptr && image.mask[at] > image.mask_threshold) {
          out.flag |= kAperHasMasked;
          maskarea += overlap;
          maskweight += overlap * weight;
          maskdx += overlap * weight * dx;
          maskdy += overlap * weight * dy;
        } else {
          const float pix = image.neighbours == nullptr ? image.data.data[at] : read_pixel(image, ix, iy, at).value;
          tv += pix * overlap;
          const double wpix = pix * overlap * weight;
          twv += wpix;
          dxpos += wpix * dx;
          dypos += wpix * dy;
        }
        totarea += overlap;
      }
    }
    if (image.mask != nullptr) {  // masked pixels take the mean unmasked value
      const double mean = tv / (totarea - maskarea);
      twv += mean * maskweight;
      dxpos += mean * maskdx;
      dypos += mean * maskdy;
    }
    if (!(twv > 0.0)) break;
    dxpos /= twv;
    dypos /= twv;
    x += dxpos * kStepFactor;
    y += dypos * kStepFactor;
    if (dxpos * dxpos + dypos * dypos < kMinStep * kMinStep) break;
  }
  out.x = x;
  out.y = y;
  out.iterations = step + 1;
  return out;
}

}  // namespace imflow::kernels
