// Aperture sums (sep.sum_circle, sum_circann, sum_ellipse, sum_ellipann and their bkgann forms):
// one loop over the aperture's pixel box, each pixel weighed by its overlap with the aperture
// (1 when wholly inside, exact or subsampled in the boundary band), with SEP 1.4.1's masking,
// noise and Poisson terms. Host and device; included by aperture.hpp.
#pragma once
#include <cmath>
#include <limits>

#include "imflow/kernels/aperture.hpp"
#include "imflow/kernels/aperture_pixels.hpp"
#include "imflow/kernels/pixel_team.hpp"

namespace imflow::kernels {
namespace aperture_detail {

inline constexpr double kPi = 3.14159265358979323846;

// An aperture shape: its scaled squared radius at an offset, which pixels may touch it, which
// are cut by its boundary, which subsamples are inside, and a pixel's exact overlap.
struct Circle {
  double r, r2;
  BoundaryBand band;
  IMFLOW_HOST_DEVICE double rpix2(double dx, double dy) const { return dx * dx + dy * dy; }
  IMFLOW_HOST_DEVICE double rpix2_sub(double dx1, double dy, double dy2) const { (void)dy; return dx1 * dx1 + dy2; }
  IMFLOW_HOST_DEVICE bool touches(double q) const { return q < band.outer2; }
  IMFLOW_HOST_DEVICE bool cut(double q) const { return q > band.inner2; }
  IMFLOW_HOST_DEVICE bool inside(double q) const { return q < r2; }
  IMFLOW_HOST_DEVICE double exact(double dx, double dy) const {
    return circle_overlap(dx - 0.5, dy - 0.5, dx + 0.5, dy + 0.5, r);
  }
};

struct CircularAnnulus {
  Circle in, out;
  IMFLOW_HOST_DEVICE double rpix2(double dx, double dy) const { return dx * dx + dy * dy; }
  IMFLOW_HOST_DEVICE double rpix2_sub(double dx1, double dy, double dy2) const { (void)dy; return dx1 * dx1 + dy2; }
  IMFLOW_HOST_DEVICE bool touches(double q) const { return q < out.band.outer2 && q > in.band.inner2; }
  IMFLOW_HOST_DEVICE bool cut(double q) const { return q > out.band.inner2 || q < in.band.outer2; }
  IMFLOW_HOST_DEVICE bool inside(double q) const { return q < out.r2 && q > in.r2; }
  IMFLOW_HOST_DEVICE double exact(double dx, double dy) const { return out.exact(dx, dy) - in.exact(dx, dy); }
};

// An ellipse of unit semi-axes (a, b, theta) scaled by r: q = cxx dx^2 + cyy dy^2 + cxy dx dy < r^2.
struct Ellipse {
  EllipseCoeffs e;
  double a, b, theta, r, r2;  // a, b unscaled
  BoundaryBand band;
  IMFLOW_HOST_DEVICE double rpix2(double dx, double dy) const {
    return e.cxx * dx * dx + e.cyy * dy * dy + e.cxy * dx * dy;
  }
  IMFLOW_HOST_DEVICE double rpix2_sub(double dx1, double dy, double dy2) const {
    return e.cxx * dx1 * dx1 + e.cyy * dy2 + e.cxy * dx1 * dy;
  }
  IMFLOW_HOST_DEVICE bool touches(double q) const { return q < band.outer2; }
  IMFLOW_HOST_DEVICE bool cut(double q) const { return q > band.inner2; }
  IMFLOW_HOST_DEVICE bool inside(double q) const { return q < r2; }
  IMFLOW_HOST_DEVICE double exact(double dx, double dy) const {
    return ellipse_overlap(dx - 0.5, dy - 0.5, dx + 0.5, dy + 0.5, a * r, b * r, theta);
  }
};

struct EllipticalAnnulus {
  Ellipse in, out;
  IMFLOW_HOST_DEVICE double rpix2(double dx, double dy) const { return out.rpix2(dx, dy); }
  IMFLOW_HOST_DEVICE double rpix2_sub(double dx1, double dy, double dy2) const { return out.rpix2_sub(dx1, dy, dy2); }
  IMFLOW_HOST_DEVICE bool touches(double q) const { return q < out.band.outer2 && q > in.band.inner2; }
  IMFLOW_HOST_DEVICE bool cut(double q) const { return q > out.band.inner2 || q < in.band.outer2; }
  IMFLOW_HOST_DEVICE bool inside(double q) const { return q < out.r2 && q > in.r2; }
  IMFLOW_HOST_DEVICE double exact(double dx, double dy) const { return out.exact(dx, dy) - in.exact(dx, dy); }
};

IMFLOW_HOST_DEVICE inline Circle make_circle(double r) { return {r, r * r, boundary_band(r)}; }
IMFLOW_HOST_DEVICE inline Ellipse make_ellipse(double a, double b, double theta, double r) {
  return {ellipse_coeffs(a, b, theta), a, b, theta, r, r * r, boundary_band(r, b)};
}

IMFLOW_HOST_DEVICE inline ApertureSum invalid_sum() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {nan, nan, nan, 0};
}

// SExtractor's circular aperture (photom.c computeaperflux): the centre rounded to float
// (`float mx = obj->mx`), every offset, square and comparison in float; pixels closer than
// raper - 0.75 count whole, those beyond raper + 0.75 not at all, the others are sampled
// subpix x subpix with float steps (dx1 += scalex) and their float sum of scale2 (locarea).
struct SextractorCircle {
  float mx, my, raper, raper2, rintlim2, rextlim2, scale, scale2, offset;
  int subpix;
};
IMFLOW_HOST_DEVICE inline SextractorCircle make_sextractor_circle(double x, double y, double r, int subpix) {
  SextractorCircle c{};
  c.mx = static_cast<float>(x);
  c.my = static_cast<float>(y);
  c.raper = static_cast<float>(r);
  c.raper2 = c.raper * c.raper;
  const float rintlim = static_cast<float>(static_cast<double>(c.raper) - 0.75);
  c.rintlim2 = rintlim > 0.0f ? rintlim * rintlim : 0.0f;
  const double rext = static_cast<double>(c.raper) + 0.75;
  c.rextlim2 = static_cast<float>(rext * rext);
  c.scale = static_cast<float>(1.0 / subpix);
  c.scale2 = c.scale * c.scale;
  c.offset = static_cast<float>(0.5 * (static_cast<double>(c.scale) - 1.0));
  c.subpix = subpix;
  return c;
}

// SExtractor's box: (int)(mx - raper + 0.499999) .. (int)(mx + raper + 1.499999), clipped.
IMFLOW_HOST_DEVICE inline PixelBox sextractor_circle_box(const SextractorCircle& c, int64_t width, int64_t height,
                                                         int32_t& flag) {
  PixelBox box{static_cast<int64_t>(static_cast<double>(c.mx - c.raper) + 0.499999),
               static_cast<int64_t>(static_cast<double>(c.mx + c.raper) + 1.499999),
               static_cast<int64_t>(static_cast<double>(c.my - c.raper) + 0.499999),
               static_cast<int64_t>(static_cast<double>(c.my + c.raper) + 1.499999)};
  if (box.xmin < 0) { box.xmin = 0; flag |= kAperTrunc; }
  if (box.xmax > width) { box.xmax = width; flag |= kAperTrunc; }
  if (box.ymin < 0) { box.ymin = 0; flag |= kAperTrunc; }
  if (box.ymax > height) { box.ymax = height; flag |= kAperTrunc; }
  return box;
}

// A pixel's weight in the aperture; false: the pixel is not visited.
template <typename Shape>
IMFLOW_HOST_DEVICE inline bool pixel_overlap(const Shape& shape, double x, double y, int64_t ix, int64_t iy,
                                             int subpix, double& overlap) {
  const double dx = static_cast<double>(ix) - x, dy = static_cast<double>(iy) - y;
  const double q = shape.rpix2(dx, dy);
  if (!shape.touches(q)) return false;
  overlap = 1.0;
  if (shape.cut(q)) {
    if (subpix == 0) {
      overlap = shape.exact(dx, dy);
    } else {
      overlap = subsampled_overlap(dx, dy, subpix, [&shape](double sx, double sy, double sy2) {
        return shape.inside(shape.rpix2_sub(sx, sy, sy2));
      });
    }
  }
  return true;
}
IMFLOW_HOST_DEVICE inline bool pixel_overlap(const SextractorCircle& c, double, double, int64_t ix, int64_t iy, int,
                                             double& overlap) {
  float dx = static_cast<float>(ix) - c.mx, dy = static_cast<float>(iy) - c.my;
  const float r2 = dx * dx + dy * dy;
  if (!(r2 < c.rextlim2)) return false;
  if (!(r2 > c.rintlim2)) {
    overlap = 1.0;
    return true;
  }
  dx += c.offset;
  dy += c.offset;
  float locarea = 0.0f;
  for (int sy = 0; sy < c.subpix; ++sy, dy += c.scale) {
    float dx1 = dx;
    const float dy2 = dy * dy;
    for (int sx = 0; sx < c.subpix; ++sx, dx1 += c.scale) {
      if (dx1 * dx1 + dy2 < c.raper2) locarea += c.scale2;
    }
  }
  overlap = static_cast<double>(locarea);
  return true;
}

template <typename Team, typename Shape>
IMFLOW_HOST_DEVICE inline ApertureSum sum_aperture(const ApertureImage& image, double x, double y, const Shape& shape,
                                                   const PixelBox& box, int32_t flag, int subpix, MaskMode mode) {
  const PixelNoise noise(image);
  double tv = 0.0, sigtv = 0.0, totarea = 0.0, maskarea = 0.0, otherarea = 0.0;
  for_box_pixels<Team>(box, [&](int64_t ix, int64_t iy) {
    double overlap = 1.0;
    if (!pixel_overlap(shape, x, y, ix, iy, subpix, overlap)) return;
    const int64_t at = iy * image.data.width + ix;
    if (image.masked(at)) {
      flag |= kAperHasMasked;
      maskarea += overlap;
    } else if (image.neighbours == nullptr) {
      tv += image.data.data[at] * overlap;
      sigtv += noise.variance(at) * overlap;
    } else {
      if (other_object(image, at)) otherarea += overlap;
      const ReadPixel pixel = read_pixel(image, ix, iy, at);
      tv += pixel.value * overlap;
      sigtv += noise.variance(pixel.noise_at) * overlap;
    }
    totarea += overlap;
  });
  double sums[] = {tv, sigtv, totarea, maskarea, otherarea};
  team_sum<Team>(sums, 5);
  tv = sums[0], sigtv = sums[1], totarea = sums[2], maskarea = sums[3], otherarea = sums[4];
  flag = Team::bit_or(flag);
  double blanked = maskarea + otherarea;
  if (image.mask != nullptr) {
    if (mode == MaskMode::ignore) {
      totarea -= maskarea;
      blanked = otherarea;
    } else {  // SEP divides even when nothing is masked (0/0 = NaN for an empty aperture)
      const double correction = totarea / (totarea - maskarea);
      tv *= correction;
      sigtv *= correction;
    }
  }
  if (image.gain > 0.0 && tv > 0.0) sigtv += tv / image.gain;
  return {tv, std::sqrt(sigtv), totarea, flag, blanked};
}

IMFLOW_HOST_DEVICE inline bool valid_subpix(int subpix) { return subpix >= 0; }
IMFLOW_HOST_DEVICE inline bool valid_ellipse(double a, double b, double theta) {
  return b >= 0.0 && a >= b && theta >= -kPi / 2.0 && theta <= kPi / 2.0;
}

// sum - mean(annulus) x area, with the annulus's scaled error in quadrature (SEP's sep.pyx).
IMFLOW_HOST_DEVICE inline ApertureSum subtract_annulus(ApertureSum sum, const ApertureSum& annulus) {
  if (!(annulus.area > 0.0)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    sum.sum = sum.error = nan;
    return sum;
  }
  if (sum.area > 0.0) {
    sum.sum -= annulus.sum / annulus.area * sum.area;
    const double err = annulus.error / annulus.area * sum.area;
    sum.error = std::sqrt(sum.error * sum.error + err * err);
  }
  return sum;
}

}  // namespace aperture_detail

template <typename Team>
IMFLOW_HOST_DEVICE inline ApertureSum sum_circle(const ApertureImage& image, double x, double y, double r, int subpix,
                                                 MaskMode mode) {
  using namespace aperture_detail;
  if (r < 0.0 || !valid_subpix(subpix)) return invalid_sum();
  int32_t flag = 0;
  const PixelBox box = aperture_box(x, y, r, r, image.data.width, image.data.height, flag);
  return sum_aperture<Team>(image, x, y, make_circle(r), box, flag, subpix, mode);
}

// sum_circle with SExtractor's float geometry (SextractorCircle; subpix >= 1).
template <typename Team>
IMFLOW_HOST_DEVICE inline ApertureSum sum_circle_sextractor(const ApertureImage& image, double x, double y, double r,
                                                            int subpix, MaskMode mode) {
  using namespace aperture_detail;
  if (r < 0.0 || subpix < 1) return invalid_sum();
  int32_t flag = 0;
  const SextractorCircle shape = make_sextractor_circle(x, y, r, subpix);
  const PixelBox box = sextractor_circle_box(shape, image.data.width, image.data.height, flag);
  return sum_aperture<Team>(image, x, y, shape, box, flag, subpix, mode);
}

template <typename Team>
IMFLOW_HOST_DEVICE inline ApertureSum sum_circann(const ApertureImage& image, double x, double y, double rin,
                                                  double rout, int subpix, MaskMode mode) {
  using namespace aperture_detail;
  if (!(rin >= 0.0 && rout >= rin) || !valid_subpix(subpix)) return invalid_sum();
  int32_t flag = 0;
  const PixelBox box = aperture_box(x, y, rout, rout, image.data.width, image.data.height, flag);
  return sum_aperture<Team>(image, x, y, CircularAnnulus{make_circle(rin), make_circle(rout)}, box, flag, subpix, mode);
}

template <typename Team>
IMFLOW_HOST_DEVICE inline ApertureSum sum_ellipse(const ApertureImage& image, double x, double y, double a, double b,
                                                  double theta, double r, int subpix, MaskMode mode) {
  using namespace aperture_detail;
  if (!(r >= 0.0 && valid_ellipse(a, b, theta)) || !valid_subpix(subpix)) return invalid_sum();
  const Ellipse shape = make_ellipse(a, b, theta, r);
  int32_t flag = 0;
  const PixelBox box = ellipse_box(x, y, shape.e, r, image.data.width, image.data.height, flag);
  return sum_aperture<Team>(image, x, y, shape, box, flag, subpix, mode);
}

template <typename Team>
IMFLOW_HOST_DEVICE inline ApertureSum sum_ellipann(const ApertureImage& image, double x, double y, double a, double b,
                                                   double theta, double rin, double rout, int subpix, MaskMode mode) {
  using namespace aperture_detail;
  if (!(rin >= 0.0 && rout >= rin && valid_ellipse(a, b, theta)) || !valid_subpix(subpix)) return invalid_sum();
  const EllipticalAnnulus shape{make_ellipse(a, b, theta, rin), make_ellipse(a, b, theta, rout)};
  int32_t flag = 0;
  const PixelBox box = ellipse_box(x, y, shape.out.e, rout, image.data.width, image.data.height, flag);
  return sum_aperture<Team>(image, x, y, shape, box, flag, subpix, mode);
}

template <typename Team>
IMFLOW_HOST_DEVICE inline ApertureSum sum_circle_bkgann(const ApertureImage& image, double x, double y, double r,
                                                        double rin, double rout, int subpix) {
  using namespace aperture_detail;
  const ApertureSum sum = sum_circle<Team>(image, x, y, r, subpix);
  return subtract_annulus(sum, sum_circann<Team>(image, x, y, rin, rout, 1, MaskMode::ignore));
}

template <typename Team>
IMFLOW_HOST_DEVICE inline ApertureSum sum_ellipse_bkgann(const ApertureImage& image, double x, double y, double a,
                                                         double b, double theta, double r, double rin, double rout,
                                                         int subpix) {
  using namespace aperture_detail;
  const ApertureSum sum = sum_ellipse<Team>(image, x, y, a, b, theta, r, subpix);
  return subtract_annulus(sum, sum_ellipann<Team>(image, x, y, a, b, theta, rin, rout, subpix));
}

}  // namespace imflow::kernels
