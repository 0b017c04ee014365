// Aperture geometry shared by the photometry kernels (host and device): the exact area of overlap
// of a pixel with a circle or an ellipse, the ellipse's quadratic-form coefficients, the pixel box
// an aperture touches and the band of pixels that need subpixel sampling, with SEP 1.4.1's
// definitions. Coordinates are 0-based pixel centres; the area functions take the rectangle
// relative to the aperture's centre.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

// Flags of the aperture results, SEP's values (sep.APER_*).
inline constexpr int32_t kAperTrunc = 0x0010;         // the aperture's box leaves the image
inline constexpr int32_t kAperHasMasked = 0x0020;     // a pixel in the aperture was masked
inline constexpr int32_t kAperAllMasked = 0x0040;     // every pixel was masked (kron_radius)
inline constexpr int32_t kAperNonPositive = 0x0080;   // the Kron moments were <= 0 (kron_radius)

// cxx x^2 + cyy y^2 + cxy x y = 1 for the ellipse of semi-axes a, b, a at angle theta from +x.
struct EllipseCoeffs {
  double cxx, cyy, cxy;
};
IMFLOW_HOST_DEVICE inline EllipseCoeffs ellipse_coeffs(double a, double b, double theta) {
  const double c = std::cos(theta), s = std::sin(theta);
  return {c * c / (a * a) + s * s / (b * b), s * s / (a * a) + c * c / (b * b),
          2.0 * c * s * (1.0 / (a * a) - 1.0 / (b * b))};
}

// Pixels [xmin, xmax) x [ymin, ymax) whose centres can lie within rx, ry of (x, y), clipped to
// the image; `flag` gains kAperTrunc when clipping was needed. The bounds truncate toward zero
// (a C cast), as SEP's do: a box reaching to -0.4 starts at 0 without the flag.
struct PixelBox {
  int64_t xmin, xmax, ymin, ymax;
};
IMFLOW_HOST_DEVICE inline PixelBox aperture_box(double x, double y, double rx, double ry, int64_t width,
                                                int64_t height, int32_t& flag) {
  PixelBox box{static_cast<int64_t>(x - rx + 0.5), static_cast<int64_t>(x + rx + 1.4999999),
               static_cast<int64_t>(y - ry + 0.5), static_cast<int64_t>(y + ry + 1.4999999)};
  if (box.xmin < 0) { box.xmin = 0; flag |= kAperTrunc; }
  if (box.xmax > width) { box.xmax = width; flag |= kAperTrunc; }
  if (box.ymin < 0) { box.ymin = 0; flag |= kAperTrunc; }
  if (box.ymax > height) { box.ymax = height; flag |= kAperTrunc; }
  return box;
}

// The box of the ellipse cxx dx^2 + cyy dy^2 + cxy dx dy <= r^2: its half-widths are
// r / sqrt(cxx - cxy^2 / (4 cyy)) and r / sqrt(cyy - cxy^2 / (4 cxx)) (0 when degenerate).
IMFLOW_HOST_DEVICE inline PixelBox ellipse_box(double x, double y, const EllipseCoeffs& e, double r,
                                               int64_t width, int64_t height, int32_t& flag) {
  double dx = e.cxx - e.cxy * e.cxy / (4.0 * e.cyy);
  dx = dx > 0.0 ? r / std::sqrt(dx) : 0.0;
  double dy = e.cyy - e.cxy * e.cxy / (4.0 * e.cxx);
  dy = dy > 0.0 ? r / std::sqrt(dy) : 0.0;
  return aperture_box(x, y, dx, dy, width, height, flag);
}

// A pixel whose centre is at squared (scaled) radius rpix2 is wholly inside a boundary of radius
// r when rpix2 <= inner2 and wholly outside when rpix2 >= outer2; between them it is cut. The
// margin is half a pixel diagonal, 0.7072, divided by the ellipse's minor axis b (1 for circles).
struct BoundaryBand {
  double inner2, outer2;
};
IMFLOW_HOST_DEVICE inline BoundaryBand boundary_band(double r, double b = 1.0) {
  const double inner = r - 0.7072 / b, outer = r + 0.7072 / b;
  return {inner > 0.0 ? inner * inner : 0.0, outer * outer};
}

#ifndef __CUDA_ARCH__
// The sum of `count` copies of `step` added one at a time from 0: what a loop that adds `step` per
// accepted point reaches, whatever the points' order. Kept per thread for the last step used.
inline double repeated_sum(double step, int count) {
  thread_local double cached_step = 0.0;
  thread_local std::vector<double> sums{0.0};
  if (step != cached_step) {
    sums.assign(1, 0.0);
    cached_step = step;
  }
  while (static_cast<int>(sums.size()) <= count) sums.push_back(sums.back() + step);
  return sums[static_cast<size_t>(count)];
}
#endif

// The fraction of subpix x subpix points of the pixel at offset (dx, dy) from the aperture's
// centre that `inside(sx, sy, sy * sy)` accepts; the points sit at the centres of the subpixels,
// visited row by row as SEP does (so sums round as SEP's do). On the host the accepted points are
// counted and the count's sum looked up (the same value), and each row reuses the first row's
// x coordinates (the same additions), so the tests have no chain of additions between them.
template <typename Inside>
IMFLOW_HOST_DEVICE inline double subsampled_overlap(double dx, double dy, int subpix, const Inside& inside) {
  const double scale = 1.0 / subpix, scale2 = scale * scale, offset = 0.5 * (scale - 1.0);
#ifndef __CUDA_ARCH__
  constexpr int kMaxCached = 32;
  if (subpix <= kMaxCached) {
    double xs[kMaxCached];
    double sx = dx + offset;
    for (int i = 0; i < subpix; ++i, sx += scale) xs[i] = sx;
    int count = 0;
    double sy = dy + offset;
    for (int j = 0; j < subpix; ++j, sy += scale) {
      const double sy2 = sy * sy;
      for (int i = 0; i < subpix; ++i) count += inside(xs[i], sy, sy2) ? 1 : 0;
    }
    return repeated_sum(scale2, count);
  }
#endif
  double overlap = 0.0;
  double sy = dy + offset;
  for (int j = 0; j < subpix; ++j, sy += scale) {
    double sx = dx + offset;
    const double sy2 = sy * sy;
    for (int i = 0; i < subpix; ++i, sx += scale) {
      if (inside(sx, sy, sy2)) overlap += scale2;
    }
  }
  return overlap;
}

// Integral of sqrt(r^2 - u^2) du from 0 to t, for 0 <= t <= r.
IMFLOW_HOST_DEVICE inline double disc_column_integral(double t, double r) {
  const double q = t / r;
  return 0.5 * (t * std::sqrt(r * r - t * t) + r * r * std::asin(q < 1.0 ? q : 1.0));
}

// Area of the disc of radius r about the origin within [0, X] x [0, Y] (X, Y >= 0): the column
// at x has height min(Y, sqrt(r^2 - x^2)); integrated in closed form.
IMFLOW_HOST_DEVICE inline double disc_quadrant_area(double X, double Y, double r) {
  X = X < r ? X : r;
  Y = Y < r ? Y : r;
  const double r2 = r * r;
  if (X * X + Y * Y <= r2) return X * Y;
  // Columns x < xc are cut by Y, columns in [xc, X] by the circle.
  const double xc = std::sqrt(r2 - Y * Y);
  return Y * xc + disc_column_integral(X, r) - disc_column_integral(xc, r);
}

// The same, signed: odd in X and in Y, so that rectangles straddling the axes decompose.
IMFLOW_HOST_DEVICE inline double disc_corner_area(double X, double Y, double r) {
  const double s = (X < 0.0) != (Y < 0.0) ? -1.0 : 1.0;
  return s * disc_quadrant_area(std::fabs(X), std::fabs(Y), r);
}

// Exact area of [xmin, xmax] x [ymin, ymax] within the disc of radius r about the origin.
IMFLOW_HOST_DEVICE inline double circle_overlap(double xmin, double ymin, double xmax, double ymax, double r) {
  if (!(r > 0.0)) return 0.0;
  const double area = disc_corner_area(xmax, ymax, r) - disc_corner_area(xmin, ymax, r) -
                      disc_corner_area(xmax, ymin, r) + disc_corner_area(xmin, ymin, r);
  return area > 0.0 ? area : 0.0;  // rounding can leave -1e-17 for a corner barely touched
}

// Signed area of the unit disc within the triangle (origin, p, q): positive when p -> q turns
// counter-clockwise. The segment is cut where it crosses the circle; pieces inside count as
// triangles, pieces outside as circular sectors.
IMFLOW_HOST_DEVICE inline double unit_disc_triangle_area(double px, double py, double qx, double qy) {
  const double dx = qx - px, dy = qy - py;
  const double a = dx * dx + dy * dy;
  double t[4] = {0.0, 0.0, 0.0, 1.0};
  int n = 1;
  if (a > 0.0) {  // |p + t d|^2 = 1: a t^2 + 2 b t + c = 0
    const double b = px * dx + py * dy, c = px * px + py * py - 1.0;
    const double disc = b * b - a * c;
    if (disc > 0.0) {
      const double root = std::sqrt(disc);
      const double t1 = (-b - root) / a, t2 = (-b + root) / a;
      if (t1 > 0.0 && t1 < 1.0) t[n++] = t1;
      if (t2 > 0.0 && t2 < 1.0) t[n++] = t2;
    }
  }
  t[n] = 1.0;
  double area = 0.0;
  for (int i = 0; i < n; ++i) {
    const double ux = px + t[i] * dx, uy = py + t[i] * dy;
    const double vx = px + t[i + 1] * dx, vy = py + t[i + 1] * dy;
    const double mid = 0.5 * (t[i] + t[i + 1]);
    const double mx = px + mid * dx, my = py + mid * dy;
    const double cross = ux * vy - uy * vx;
    if (mx * mx + my * my <= 1.0) {
      area += 0.5 * cross;
    } else {
      area += 0.5 * std::atan2(cross, ux * vx + uy * vy);
    }
  }
  return area;
}

// Exact area of [xmin, xmax] x [ymin, ymax] within the ellipse of semi-axes a, b (a at angle
// theta from +x) about the origin: the rectangle mapped to the frame where the ellipse is the
// unit disc (rotate by -theta, divide by a and b) is a parallelogram whose overlap with the disc
// is the sum over its edges of unit_disc_triangle_area; areas scale back by a b.
IMFLOW_HOST_DEVICE inline double ellipse_overlap(double xmin, double ymin, double xmax, double ymax, double a,
                                                 double b, double theta) {
  if (!(a > 0.0 && b > 0.0)) return 0.0;
  const double c = std::cos(theta), s = std::sin(theta);
  const double xs[4] = {xmin, xmax, xmax, xmin}, ys[4] = {ymin, ymin, ymax, ymax};
  double u[4], v[4];
  for (int i = 0; i < 4; ++i) {
    u[i] = (xs[i] * c + ys[i] * s) / a;
    v[i] = (-xs[i] * s + ys[i] * c) / b;
  }
  double area = 0.0;
  for (int i = 0; i < 4; ++i) {
    const int j = (i + 1) & 3;
    area += unit_disc_triangle_area(u[i], v[i], u[j], v[j]);
  }
  return a * b * std::fabs(area);
}

}  // namespace imflow::kernels
