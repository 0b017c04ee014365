// The two ways read_fits_plane and read_fits_region can read pixels, callable one by one so that
// tests can compare them bit for bit: the direct read of uncompressed data (fits_direct_read.hpp)
// and CFITSIO's own read (fits_read_pixll, fits_read_subset).
#pragma once
#include <cstdint>
#include <filesystem>

#include "imflow/io/fits.hpp"

namespace imflow::detail {

enum class FitsReadPath {
  fastest,  // the direct read where it applies, CFITSIO for everything else (what imflow uses)
  cfitsio,  // CFITSIO only
};

int64_t read_fits_plane(const std::filesystem::path& path, int hdu, int64_t plane, ImageBuffer& out,
                        const ReadLimits& limits, FitsReadPath read_path);
int64_t read_fits_region(const std::filesystem::path& path, int hdu, int64_t plane, const TileRect& region,
                         ImageBuffer& out, const ReadLimits& limits, FitsReadPath read_path);

// Whether FitsReadPath::fastest reads HDU `hdu` of `path` directly (not through CFITSIO).
bool fits_direct_read_applies(const std::filesystem::path& path, int hdu);

}  // namespace imflow::detail
