// Per-source measurements from a label map, CPU kernel.
#pragma once
#include <cstdint>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/kernels/source_sums.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

// One raster pass: the accumulators of labels 1..nlabels (index label-1). (x0, y0) is the
// position of image(0, 0) in the whole image, so tiles accumulate in image coordinates.
std::vector<SourceSums> accumulate_sources(ConstImageView image, const int32_t* labels, int32_t nlabels,
                                           int64_t x0 = 0, int64_t y0 = 0);

// The catalog of accumulators, ids 1..n in order. (width, height): the whole image's size.
Catalog finish_sources(const std::vector<SourceSums>& sums, int64_t width, int64_t height);

// One pass over the image: for every label 1..nlabels, npix, flux (sum), intensity-weighted
// centroid, peak (first maximum in raster order) and bounding box. Sums in float64.
Catalog measure_sources(ConstImageView image, const int32_t* labels, int32_t nlabels);

}  // namespace imflow::kernels
