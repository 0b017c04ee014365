// Per-source measurements on the CPU: one raster pass accumulating float64 sums per label.
#include "imflow/kernels/measure.hpp"

#include <algorithm>
#include <vector>

namespace imflow::kernels {

Catalog measure_sources(ConstImageView image, const int32_t* labels, int32_t nlabels) {
  Catalog catalog(static_cast<size_t>(nlabels));
  std::vector<double> sum_x(catalog.size(), 0.0), sum_y(catalog.size(), 0.0);
  for (int32_t k = 0; k < nlabels; ++k) catalog[k].id = k + 1;
  for (int64_t y = 0; y < image.height; ++y) {
    for (int64_t x = 0; x < image.width; ++x) {
      const int64_t i = y * image.width + x;
      const int32_t label = labels[i];
      if (label <= 0) continue;
      Source& s = catalog[label - 1];
      const double value = image.data[i];
      if (s.npix == 0) {
        s.peak = value;
        s.peak_x = s.xmin = s.xmax = x;
        s.peak_y = s.ymin = s.ymax = y;
      } else {
        if (value > s.peak) {
          s.peak = value;
          s.peak_x = x;
          s.peak_y = y;
        }
        s.xmin = std::min(s.xmin, x);
        s.xmax = std::max(s.xmax, x);
        s.ymax = y;
      }
      ++s.npix;
      s.flux += value;
      sum_x[label - 1] += value * static_cast<double>(x);
      sum_y[label - 1] += value * static_cast<double>(y);
    }
  }
  for (size_t k = 0; k < catalog.size(); ++k) {
    catalog[k].x = sum_x[k] / catalog[k].flux;
    catalog[k].y = sum_y[k] / catalog[k].flux;
  }
  return catalog;
}

}  // namespace imflow::kernels
