// Strict decoding of the common PNG case (8- or 16-bit grayscale, not interlaced) straight to
// float: any file it does not fully accept is left to libpng (src/io/png_reader.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "imflow/image.hpp"

namespace imflow::detail {

// PNG's Paeth predictor of a byte from its left (a), upper (b) and upper-left (c) neighbours.
inline int paeth_predictor(int a, int b, int c) {
  const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

// Decodes `bytes` (a whole PNG file) into `out` and sets `bit_depth`; true only when the file is a
// non-interlaced 8/16-bit gray PNG of at most max_pixels pixels that passes every check libpng
// makes (chunk order and CRCs, the zlib stream and its Adler-32, filter types, IEND) with no
// unknown critical chunk and no trailing image data. False leaves `out` unspecified.
bool decode_gray_png(const unsigned char* bytes, size_t size, int64_t max_pixels, ImageBuffer& out, int& bit_depth);

}  // namespace imflow::detail
