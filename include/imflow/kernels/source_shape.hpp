// SEP's second moments, ellipse and their errors (analyse.c) from weighted sums about a reference
// point; one definition compiled for the host (SourceSums::finish) and the device (cuda/measure.cu).
#pragma once
#include <math.h>

#include "imflow/kernels/host_device.hpp"
#include "imflow/kernels/pixel_moments.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

struct EllipseAxes {
  double a, b;   // semi-axes: the square roots of the matrix's eigenvalues
  double theta;  // radians in [-pi/2, pi/2], from +x towards +y
};

// The ellipse of a symmetric 2x2 matrix [[x2, xy], [xy, y2]] (second moments, or the centroid's
// covariance for SExtractor's ERRA/ERRB/ERRTHETA): a, b = sqrt((x2 + y2)/2 +- sqrt((x2 - y2)^2/4
// + xy^2)), theta = atan2(2 xy, x2 - y2) / 2. SEP and SExtractor take pi/4 whenever x2 == y2,
// whatever the sign of xy; here only when xy == 0 too (a diagonal pair with xy < 0 lies at
// -pi/4, which SEP itself reports when x2 and y2 differ in the last bit).
// One semi-axis alone (a where `major`, else b), without the angle's atan2.
IMFLOW_HOST_DEVICE inline double ellipse_semi_axis(double x2, double y2, double xy, bool major) {
  const double diff = x2 - y2;
  const double root = sqrt(0.25 * diff * diff + xy * xy);
  const double mid = 0.5 * (x2 + y2);
  return sqrt(major ? mid + root : mid - root);
}

// The angle alone.
IMFLOW_HOST_DEVICE inline double ellipse_angle(double x2, double y2, double xy) {
  const double diff = x2 - y2;
  return (fabs(diff) > 0.0 || xy != 0.0) ? atan2(2.0 * xy, diff) / 2.0 : 3.1415926535898 / 4.0;
}

IMFLOW_HOST_DEVICE inline EllipseAxes ellipse_axes(double x2, double y2, double xy) {
  EllipseAxes e;
  e.a = ellipse_semi_axis(x2, y2, xy, true);
  e.b = ellipse_semi_axis(x2, y2, xy, false);
  e.theta = ellipse_angle(x2, y2, xy);
  return e;
}

struct SourceShape {
  double x2, y2, xy;  // central second moments, pix^2 (with SEP's 1/12 added when singular)
  double a, b;        // ellipse semi-axes, pix
  double theta;       // radians, atan2(2 xy, x2 - y2) / 2 (pi/4 when x2 == y2)
  double cxx, cyy, cxy;  // ellipse parameters: cxx dx^2 + cyy dy^2 + cxy dx dy = 1 on the a/b ellipse, pix^-2
  bool singular;      // the 1/12 pix^2 was added (SEP's OBJ_SINGU)
};

// The shape of central second moments (x2, y2, xy) with SEP's rule: when x2 y2 - xy^2 < 0.00694
// (a line or a point) add 0.0833333 (1/12 pix^2) to x2 and y2; then the ellipse (ellipse_axes)
// and its parameters.
IMFLOW_HOST_DEVICE inline SourceShape shape_of_moments(double x2, double y2, double xy) {
  SourceShape s;
  s.singular = x2 * y2 - xy * xy < 0.00694;
  if (s.singular) {
    x2 += 0.0833333;
    y2 += 0.0833333;
  }
  const EllipseAxes axes = ellipse_axes(x2, y2, xy);
  s.x2 = x2;
  s.y2 = y2;
  s.xy = xy;
  s.a = axes.a;
  s.b = axes.b;
  s.theta = axes.theta;
  const double det = x2 * y2 - xy * xy;
  s.cxx = y2 / det;
  s.cyy = x2 / det;
  s.cxy = -2.0 * xy / det;
  return s;
}

IMFLOW_HOST_DEVICE inline SourceShape nan_shape() {
  const double nan = NAN;
  SourceShape s;
  s.x2 = s.y2 = s.xy = s.a = s.b = s.theta = s.cxx = s.cyy = s.cxy = nan;
  s.singular = false;
  return s;
}

// w: the sums of the weights over the segment (s0 = sum w, sx = sum w dx, ...), dx/dy about any
// fixed reference. SEP's rules (theta: ellipse_axes): x2 = sxx/s0 - (sx/s0)^2 etc., then
// shape_of_moments. s0 <= 0 (possible only when the weights are not those the segment was
// detected on): all NaN.
IMFLOW_HOST_DEVICE inline SourceShape source_shape(const PixelMoments& w) {
  const double s0 = w.s;
  if (!(s0 > 0.0)) return nan_shape();
  const double xm = w.sx / s0, ym = w.sy / s0;
  return shape_of_moments(w.sxx / s0 - xm * xm, w.syy / s0 - ym * ym, w.sxy / s0 - xm * ym);
}

// The second moments about a given centre (cx, cy) (relative to the sums' reference) instead of
// the w-weighted centroid (xm, ym): SEP's analyse for a deblended object, whose centre is its
// branch's barycentre. E[(dx - cx)^2] = E[(dx - xm)^2] + (xm - cx)^2 and E[(dx - cx)(dy - cy)] =
// E[(dx - xm)(dy - ym)] + (xm - cx)(ym - cy) (the cross terms vanish as E[dx - xm] = 0), the
// same quantities as SEP's sxx/s0 + cx^2 - 2 xm cx without its cancellation; then
// shape_of_moments (the singular rule applies to the moments about the centre, as in SEP).
IMFLOW_HOST_DEVICE inline SourceShape source_shape_about(const PixelMoments& w, double cx, double cy) {
  const double s0 = w.s;
  if (!(s0 > 0.0)) return nan_shape();
  const double xm = w.sx / s0, ym = w.sy / s0, ox = xm - cx, oy = ym - cy;
  return shape_of_moments(w.sxx / s0 - xm * xm + ox * ox, w.syy / s0 - ym * ym + oy * oy,
                          w.sxy / s0 - xm * ym + ox * oy);
}

// The variance of one pixel for the error columns: the background noise rms^2 plus, with a gain
// (e-/ADU, > 0), the Poisson noise of a positive background-subtracted value w (SEP's cvar;
// photutils' calc_total_error). A NaN rms (no noise estimate) makes every error NaN. With
// backnoise2 > 0 (SExtractor's WEIGHT_GAIN: the global background variance) the Poisson term is
// scaled by rms^2 / backnoise2, as examineiso's pix / gain x var / backnoise2.
IMFLOW_HOST_DEVICE inline double pixel_variance(double rms, double w, double gain, double backnoise2 = 0.0) {
  double variance = rms * rms;
  if (gain > 0.0 && w > 0.0) variance += backnoise2 > 0.0 ? w / gain * variance / backnoise2 : w / gain;
  return variance;
}

struct SourceErrors {
  double flux_err;              // sqrt(sum of the variances): FLUXERR_ISO
  double errx2, erry2, errxy;   // variances of the centroid (SEP's errx2, erry2, errxy), pix^2
};

// w: the weight sums of source_shape; v: the sums of the pixel variances (v.s = sum var, v.sx =
// sum var dx, ...) over the same pixels and reference; (cx, cy): the centre the errors are taken
// about (relative to the reference). SEP's rules: errx2 = sum var (x - cx)^2 / s0^2, likewise
// erry2 and errxy; for a singular source (shape.singular), where errx2 erry2 - errxy^2 < c^2 with
// c = sum var / 12 / s0^2, c is added to errx2 and erry2.
IMFLOW_HOST_DEVICE inline SourceErrors source_errors_about(const SourceShape& shape, const PixelMoments& w,
                                                           const PixelMoments& v, double cx, double cy) {
  const double s0 = w.s;
  SourceErrors e;
  e.flux_err = sqrt(v.s);
  if (!(s0 > 0.0)) {
    e.errx2 = e.erry2 = e.errxy = NAN;
    return e;
  }
  const double s02 = s0 * s0;
  e.errx2 = (v.sxx - 2.0 * cx * v.sx + cx * cx * v.s) / s02;
  e.erry2 = (v.syy - 2.0 * cy * v.sy + cy * cy * v.s) / s02;
  e.errxy = (v.sxy - cx * v.sy - cy * v.sx + cx * cy * v.s) / s02;
  if (shape.singular) {
    const double c = v.s * 0.08333 / s02;
    if (e.errx2 * e.erry2 - e.errxy * e.errxy < c * c) {
      e.errx2 += c;
      e.erry2 += c;
    }
  }
  return e;
}

// The errors about the w-weighted centroid (every object but a deblended one).
IMFLOW_HOST_DEVICE inline SourceErrors source_errors(const SourceShape& shape, const PixelMoments& w,
                                                     const PixelMoments& v) {
  const double s0 = w.s;
  return s0 > 0.0 ? source_errors_about(shape, w, v, w.sx / s0, w.sy / s0) : source_errors_about(shape, w, v, 0.0, 0.0);
}

// The catalog columns that come from the shape and errors: flux_iso, the moments, ellipse and
// ellipse parameters, and the errors.
IMFLOW_HOST_DEVICE inline void set_shape_columns(Source& s, const PixelMoments& weights, const SourceShape& shape,
                                                 const SourceErrors& errors) {
  s.flux_iso = weights.s;
  s.flags = (s.flags & ~kFlagSingular) | (shape.singular ? kFlagSingular : 0);
  s.x2 = shape.x2;
  s.y2 = shape.y2;
  s.xy = shape.xy;
  s.a = shape.a;
  s.b = shape.b;
  s.theta = shape.theta;
  s.cxx = shape.cxx;
  s.cyy = shape.cyy;
  s.cxy = shape.cxy;
  s.flux_iso_err = errors.flux_err;
  s.errx2 = errors.errx2;
  s.erry2 = errors.erry2;
  s.errxy = errors.errxy;
}

// The columns from the weights' and the variances' sums (SourceSums::finish and the GPU's
// rows_kernel alike).
IMFLOW_HOST_DEVICE inline void set_shape_columns(Source& s, const PixelMoments& weights, const PixelMoments& variances) {
  const SourceShape shape = source_shape(weights);
  set_shape_columns(s, weights, shape, source_errors(shape, weights, variances));
}

// The same about a deblended object's centre (cx, cy), relative to the sums' reference.
IMFLOW_HOST_DEVICE inline void set_shape_columns_about(Source& s, const PixelMoments& weights,
                                                       const PixelMoments& variances, double cx, double cy) {
  const SourceShape shape = source_shape_about(weights, cx, cy);
  set_shape_columns(s, weights, shape, source_errors_about(shape, weights, variances, cx, cy));
}

}  // namespace imflow::kernels
