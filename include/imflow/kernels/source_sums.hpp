// Mergeable per-source accumulators: what one pass over a segment's pixels sums up, so partial
// sums from different tiles (or threads) of one image merge into the same source exactly.
// Coordinates are image (not tile) pixel indices, 0-based.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>

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

  // Add one pixel. Pixels of one accumulator must come in raster order for the peak tie rule
  // (merge() restores the rule between accumulators).
  void add(int64_t x, int64_t y, double value) {
    if (npix == 0 || value > peak) {
      peak = value;
      peak_x = x;
      peak_y = y;
    }
    ++npix;
    flux += value;
    sum_x += value * static_cast<double>(x);
    sum_y += value * static_cast<double>(y);
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
    ymin = std::min(ymin, y);
    ymax = std::max(ymax, y);
  }

  // Fold another part of the same source in. Ties of the peak go to the first pixel in raster order.
  void merge(const SourceSums& o) {
    if (o.npix == 0) return;
    if (npix == 0 || o.peak > peak ||
        (o.peak == peak && (o.peak_y < peak_y || (o.peak_y == peak_y && o.peak_x < peak_x)))) {
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
  }

  // The catalog row. `width`/`height`: the whole image's size (for edge flags and the like).
  Source finish(int32_t id, int64_t /*width*/, int64_t /*height*/) const {
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
    return s;
  }
};

}  // namespace imflow::kernels
