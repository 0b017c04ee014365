// Float64 FITS data beyond float32's range reads as +-Infinity, an invalid pixel: the reader says
// so, once per read or, for a plane read in regions, once for the plane (ReadLimits).
#pragma once
#include <filesystem>

#include "imflow/image.hpp"
#include "imflow/io/fits.hpp"

namespace imflow::detail {

// After a read of `region` (plane coordinates) of a BITPIX -64 plane into `pixels`: a warning
// naming the file, HDU, plane and the count of infinite pixels, or that count added to
// limits.out_of_range_pixels (within limits.out_of_range_core).
void check_float_range(const std::filesystem::path& path, int hdu, int64_t plane, const FitsImageInfo& info,
                       const TileRect& region, const ImageBuffer& pixels, const ReadLimits& limits);

}  // namespace imflow::detail
