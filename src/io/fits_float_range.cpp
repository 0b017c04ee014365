// Counting and reporting pixels beyond float32's range (fits_float_range.hpp).
#include "fits_float_range.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace imflow {

void warn_beyond_float32(const std::filesystem::path& path, int hdu, int64_t plane, int64_t count) {
  spdlog::warn("{}: HDU {} plane {}: {} pixel(s) infinite or beyond float32's range (|value| > 3.4e38): treated as invalid",
               path.string(), hdu, plane, count);
}

namespace detail {

bool may_exceed_float32(const PixelConversion& conversion) {
  if (conversion.bitpix == -64) return true;
  if (conversion.bitpix == -32) return conversion.scale != 1.0 || conversion.zero != 0.0;
  const double largest_stored = std::ldexp(1.0, conversion.bitpix - 1);  // |most negative| stored value
  const double largest = std::fabs(conversion.scale) * largest_stored + std::fabs(conversion.zero);
  return !(largest <= double(std::numeric_limits<float>::max()));
}

void check_float_range(const std::filesystem::path& path, int hdu, int64_t plane, const PixelConversion& conversion,
                       const TileRect& region, const ImageBuffer& pixels, const ReadLimits& limits) {
  if (!may_exceed_float32(conversion)) return;
  // The rows and columns of `pixels` to count: all of them, or those inside the core.
  int64_t x0 = 0, y0 = 0, x1 = pixels.width(), y1 = pixels.height();
  const TileRect& core = limits.out_of_range_core;
  if (limits.out_of_range_pixels != nullptr && core.width > 0 && core.height > 0) {
    x0 = std::clamp<int64_t>(core.x - region.x, 0, x1);
    y0 = std::clamp<int64_t>(core.y - region.y, 0, y1);
    x1 = std::clamp<int64_t>(core.x_end() - region.x, x0, x1);
    y1 = std::clamp<int64_t>(core.y_end() - region.y, y0, y1);
  }
  int64_t infinite = 0;
  for (int64_t y = y0; y < y1; ++y) {
    const float* row = pixels.data() + y * pixels.width();
    for (int64_t x = x0; x < x1; ++x) infinite += std::isinf(row[x]) ? 1 : 0;
  }
  if (infinite == 0) return;
  if (limits.out_of_range_pixels != nullptr) {
    *limits.out_of_range_pixels += infinite;
  } else {
    warn_beyond_float32(path, hdu, plane, infinite);
  }
}

}  // namespace detail
}  // namespace imflow
