// FITS values beyond float32's range (BITPIX -64 data, or stored values that BSCALE/BZERO carry
// beyond it) read as +-Infinity, an invalid pixel: the reader says so, once per read or, for a
// plane read in regions, once for the plane (ReadLimits).
#pragma once
#include <filesystem>

#include "imflow/image.hpp"
#include "imflow/io/fits.hpp"
#include "fits_pixel_convert.hpp"

namespace imflow::detail {

// Whether stored values converted by `conversion` can land beyond float32's range: BITPIX -64, a
// scaled BITPIX -32, or integers whose BSCALE x largest stored value + BZERO exceeds 3.4e38.
bool may_exceed_float32(const PixelConversion& conversion);

// After a read of `region` (plane coordinates) of a plane into `pixels` with `conversion`: when the
// conversion may exceed float32's range, a warning naming the file, HDU, plane and the count of
// infinite pixels, or that count added to limits.out_of_range_pixels (within
// limits.out_of_range_core).
void check_float_range(const std::filesystem::path& path, int hdu, int64_t plane, const PixelConversion& conversion,
                       const TileRect& region, const ImageBuffer& pixels, const ReadLimits& limits);

}  // namespace imflow::detail
