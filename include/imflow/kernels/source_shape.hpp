// SEP's second moments and ellipse (analyse.c) from weighted sums about a reference point; one
// definition compiled for the host (SourceSums::finish) and the device (cuda/measure.cu).
#pragma once
#include <math.h>

#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

struct SourceShape {
  double x2, y2, xy;  // central second moments, pix^2 (with SEP's 1/12 added when singular)
  double a, b;        // ellipse semi-axes, pix
  double theta;       // radians, atan2(2 xy, x2 - y2) / 2 (pi/4 when x2 == y2)
};

// s0 = sum w, sx = sum w dx, sy = sum w dy, sxx = sum w dx^2, syy, sxy: the sums of the weights
// w over the segment, dx/dy about any fixed reference. SEP's rules (theta: see below): x2 = sxx/s0 - (sx/s0)^2 etc.;
// when x2 y2 - xy^2 < 0.00694 (a line or a point) add 0.0833333 (1/12 pix^2) to x2 and y2.
// s0 <= 0 (possible only when the weights are not those the segment was detected on): all NaN.
IMFLOW_HOST_DEVICE inline SourceShape source_shape(double s0, double sx, double sy, double sxx, double syy,
                                                   double sxy) {
  SourceShape s;
  if (!(s0 > 0.0)) {
    const double nan = NAN;
    s.x2 = s.y2 = s.xy = s.a = s.b = s.theta = nan;
    return s;
  }
  const double xm = sx / s0, ym = sy / s0;
  double x2 = sxx / s0 - xm * xm;
  double y2 = syy / s0 - ym * ym;
  const double xy = sxy / s0 - xm * ym;
  if (x2 * y2 - xy * xy < 0.00694) {
    x2 += 0.0833333;
    y2 += 0.0833333;
  }
  const double diff = x2 - y2;
  // SEP takes pi/4 whenever x2 == y2, whatever the sign of xy; here only when xy == 0 too (a
  // diagonal pair with xy < 0 lies at -pi/4, which SEP itself reports when x2 and y2 differ in
  // the last bit).
  s.theta = (fabs(diff) > 0.0 || xy != 0.0) ? atan2(2.0 * xy, diff) / 2.0 : 3.1415926535898 / 4.0;
  const double root = sqrt(0.25 * diff * diff + xy * xy);
  const double mid = 0.5 * (x2 + y2);
  s.x2 = x2;
  s.y2 = y2;
  s.xy = xy;
  s.a = sqrt(mid + root);
  s.b = sqrt(mid - root);
  return s;
}

}  // namespace imflow::kernels
