// Mergeable sums of one quantity over a source's pixels about a reference pixel (the source
// sums' weights and variances); host and device (cuda/measure.cu).
#pragma once
#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

// Sums of one quantity q over a source's pixels, about a reference pixel: sum q, sum q dx,
// sum q dy, sum q dx^2, sum q dy^2, sum q dx dy with dx = x - ref_x. Kept about a pixel of the
// source (not the image origin) to avoid the cancellation of x^2 sums on big images.
struct PixelMoments {
  double s = 0.0, sx = 0.0, sy = 0.0, sxx = 0.0, syy = 0.0, sxy = 0.0;

  IMFLOW_HOST_DEVICE void add(double q, double dx, double dy) {
    s += q;
    sx += q * dx;
    sy += q * dy;
    sxx += q * dx * dx;
    syy += q * dy * dy;
    sxy += q * dx * dy;
  }

  // Add sums `o` taken about a reference (dx, dy) away from this one's, shifted with the exact
  // binomial identities: sum q (dx' + dx) = sum q dx' + dx sum q, and so on.
  IMFLOW_HOST_DEVICE void merge(const PixelMoments& o, double dx, double dy) {
    sxx += o.sxx + 2.0 * dx * o.sx + dx * dx * o.s;
    syy += o.syy + 2.0 * dy * o.sy + dy * dy * o.s;
    sxy += o.sxy + dx * o.sy + dy * o.sx + dx * dy * o.s;
    sx += o.sx + dx * o.s;
    sy += o.sy + dy * o.s;
    s += o.s;
  }
};

}  // namespace imflow::kernels
