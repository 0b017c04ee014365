// A rectangle of pixels in a whole image (0-based, half-open): how tiles of a large image are
// described (the core a tile owns, the halo'd region it reads). docs/tiling.md.
#pragma once
#include <algorithm>
#include <cstdint>

namespace imflow {

struct TileRect {
  int64_t x = 0, y = 0;           // first column and row, in whole-image pixels
  int64_t width = 0, height = 0;

  int64_t x_end() const { return x + width; }
  int64_t y_end() const { return y + height; }
  int64_t size() const { return width * height; }
  bool operator==(const TileRect&) const = default;

  // This rectangle grown by `margin` on every side, clipped to a width x height image.
  TileRect grown(int64_t margin, int64_t image_width, int64_t image_height) const {
    const int64_t x0 = std::max<int64_t>(0, x - margin), y0 = std::max<int64_t>(0, y - margin);
    const int64_t x1 = std::min(image_width, x_end() + margin), y1 = std::min(image_height, y_end() + margin);
    return {x0, y0, x1 - x0, y1 - y0};
  }
};

}  // namespace imflow
