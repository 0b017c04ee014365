// Mergeable per-source accumulators: what one pass over a segment's pixels sums up, so partial
// sums from different tiles (or threads) of one image merge into the same source exactly.
// Coordinates are image (not tile) pixel indices, 0-based.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>

#include "imflow/kernels/pixel_moments.hpp"
#include "imflow/kernels/source_shape.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

struct SourceSums {
  int64_t npix = 0;
  double flux = 0.0;   // sum of values
  double sum_x = 0.0;  // sum of value * x
  double sum_y = 0.0;  // sum of value * y
  double peak = 0.0;   // first maximum in raster order (valid when npix > 0)
  int64_t peak_x = 0, peak_y = 0;
  int64_t xmin = std::numeric_limits<int64_t>::max(), xmax = std::numeric_limits<int64_t>::min();
  int64_t ymin = std::numeric_limits<int64_t>::max(), ymax = std::numeric_limits<int64_t>::min();
  // Moments about the reference pixel (ref_x, ref_y), the first pixel added, of the
  // background-subtracted weights w = value - background (weights.s is flux_iso) and of the
  // pixel variances (kernels::pixel_variance), for the error columns. merge() shifts one part's
  // sums to the other's reference (float64 rounding of terms of the source's size).
  int64_t ref_x = 0, ref_y = 0;
  PixelMoments weights, variances;
  int32_t flags = 0;   // kFlagMaskedNeighbour as found by the pass; finish() adds kFlagEdge

  // Add one pixel. Pixels of one accumulator must come in raster order for the peak tie rule
  // (merge() restores the rule between accumulators). `background` is subtracted for the
  // moments and flux_iso only (flux, x, y and peak use `value`); `variance` is the pixel's.
  void add(int64_t x, int64_t y, double value, double background = 0.0, double variance = 0.0) {
    if (npix == 0 || value > peak) {
      peak = value;
      peak_x = x;
      peak_y = y;
    }
    if (npix == 0) {
      ref_x = x;
      ref_y = y;
    }
    ++npix;
    flux += value;
    sum_x += value * static_cast<double>(x);
    sum_y += value * static_cast<double>(y);
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
    ymin = std::min(ymin, y);
    ymax = std::max(ymax, y);
    const double dx = static_cast<double>(x - ref_x), dy = static_cast<double>(y - ref_y);
    weights.add(value - background, dx, dy);
    variances.add(variance, dx, dy);
  }

  // Fold another part of the same source in. Ties of the peak go to the first pixel in raster order.
  void merge(const SourceSums& o) {
    if (o.npix == 0) return;
    if (npix == 0) {
      *this = o;
      return;
    }
    if (o.peak > peak || (o.peak == peak && (o.peak_y < peak_y || (o.peak_y == peak_y && o.peak_x < peak_x)))) {
      peak = o.peak;
      peak_x = o.peak_x;
      peak_y = o.peak_y;
    }
    npix += o.npix;
    flux += o.flux;
    sum_x += o.sum_x;
    sum_y += o.sum_y;
    xmin = std::min(xmin, o.xmin);
    xmax = std::max(xmax, o.xmax);
    ymin = std::min(ymin, o.ymin);
    ymax = std::max(ymax, o.ymax);
    const double dx = static_cast<double>(o.ref_x - ref_x), dy = static_cast<double>(o.ref_y - ref_y);
    weights.merge(o.weights, dx, dy);
    variances.merge(o.variances, dx, dy);
    flags |= o.flags;
  }

  // The catalog row. `width`/`height`: the whole image's size (for the edge flag).
  Source finish(int32_t id, int64_t width, int64_t height) const {
    Source s;
    s.id = id;
    s.npix = npix;
    s.flux = flux;
    s.x = sum_x / flux;
    s.y = sum_y / flux;
    s.peak = peak;
    s.peak_x = peak_x;
    s.peak_y = peak_y;
    s.xmin = xmin;
    s.xmax = xmax;
    s.ymin = ymin;
    s.ymax = ymax;
    s.flags = flags;
    set_shape_columns(s, weights, variances);
    if (npix > 0 && (xmin == 0 || ymin == 0 || xmax == width - 1 || ymax == height - 1)) s.flags |= kFlagEdge;
    return s;
  }

  // The row of a deblended object (SEP's analyse for a blend's child): its centre (cx, cy)
  // (image pixels) is x, y, the second moments and their errors are taken about it, and
  // kFlagDeblended is set; every other column as finish().
  Source finish_about(int32_t id, int64_t width, int64_t height, double cx, double cy) const {
    Source s = finish(id, width, height);
    s.x = cx;
    s.y = cy;
    set_shape_columns_about(s, weights, variances, cx - static_cast<double>(ref_x), cy - static_cast<double>(ref_y));
    s.flags |= kFlagDeblended;
    return s;
  }
};

}  // namespace imflow::kernels
