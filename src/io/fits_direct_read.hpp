// The direct read of uncompressed FITS image data: CFITSIO finds where an HDU's
// data lies and how it is scaled; the pixels are then pread row by row from an own file descriptor
// and converted in place, bit for bit as CFITSIO's TFLOAT read would (fits_pixel_convert.hpp).
#pragma once
#include <fitsio.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "fits_pixel_convert.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/tile_rect.hpp"

namespace imflow::detail {

// Where the data of one uncompressed image HDU lies in its file and how its values become floats.
struct DirectImageLayout {
  int64_t header_offset = 0;  // file offset of the HDU's header (its first card is checked)
  int64_t data_offset = 0;    // file offset of the image's first pixel
  int64_t width = 0, height = 0;
  int bytes_per_pixel = 0;
  PixelConversion conversion;
};

// The layout of the current HDU of `file` (opened by path on disk, moved to the image HDU
// described by `info`), from CFITSIO's own parse of the header. nullopt where the direct read does
// not apply and CFITSIO must read: tile-compressed images, files CFITSIO decompressed on opening
// (gzip, compress), a BSCALE or BZERO that is zero, infinite or NaN, or any layout that is not a
// plain contiguous image.
std::optional<DirectImageLayout> direct_image_layout(fitsfile* file, const FitsImageInfo& info);

// Read `region` (whole-plane coordinates, inside the plane) of plane `plane` into `out`
// (region.width x region.height floats, row-major). `what` names the read in error messages
// ("HDU 1 plane 0"); a short file or an I/O error throws InputError naming `path` and the reason.
// convert = false (4-byte pixels only): the stored bytes, in the file's byte order.
void read_direct(const std::filesystem::path& path, const DirectImageLayout& layout, int64_t plane,
                 const TileRect& region, float* out, const std::string& what, bool convert = true);

}  // namespace imflow::detail
