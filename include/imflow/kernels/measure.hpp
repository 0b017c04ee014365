// Per-source measurements from a label map, CPU kernel.
#pragma once
#include <cstdint>

#include "imflow/image.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

// One pass over the image: for every label 1..nlabels, npix, flux (sum), intensity-weighted
// centroid, peak (first maximum in raster order) and bounding box. Sums in float64.
Catalog measure_sources(ConstImageView image, const int32_t* labels, int32_t nlabels);

}  // namespace imflow::kernels
