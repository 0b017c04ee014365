// Per-source measurements on the CPU: one raster pass accumulating float64 sums per label.
#include "imflow/kernels/measure.hpp"

namespace imflow::kernels {

std::vector<SourceSums> accumulate_sources(ConstImageView image, const int32_t* labels, int32_t nlabels,
                                           int64_t x0, int64_t y0) {
  std::vector<SourceSums> sums(static_cast<size_t>(nlabels));
  for (int64_t y = 0; y < image.height; ++y) {
    const int64_t row = y * image.width;
    for (int64_t x = 0; x < image.width; ++x) {
      const int32_t label = labels[row + x];
      if (label <= 0) continue;
      sums[label - 1].add(x0 + x, y0 + y, image.data[row + x]);
    }
  }
  return sums;
}

Catalog finish_sources(const std::vector<SourceSums>& sums, int64_t width, int64_t height) {
  Catalog catalog;
  catalog.reserve(sums.size());
  for (size_t k = 0; k < sums.size(); ++k) catalog.push_back(sums[k].finish(static_cast<int32_t>(k + 1), width, height));
  return catalog;
}

Catalog measure_sources(ConstImageView image, const int32_t* labels, int32_t nlabels) {
  return finish_sources(accumulate_sources(image, labels, nlabels), image.width, image.height);
}

}  // namespace imflow::kernels
