// Grayscale PNGs of 8 or 16 bits, not interlaced (what MRI and CT exports and imflow's own
// outputs are), decoded without libpng: the chunks walked with every CRC checked, the IDAT stream
// inflated by libdeflate in one call (its Adler-32 checked), the rows unfiltered. Twice as fast as
// libpng + zlib on the real MRI slices. A file it does not take, or one with anything unusual
// (other chunks libpng would judge, a stream that does not end exactly with the image, a bad
// CRC or filter byte), is left to libpng, which decodes it or says why it cannot.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "imflow/image.hpp"

namespace imflow::detail {

// PNG's byte-level basics, for this decoder and png_reader.cpp: the file signature, and a chunk's
// length or CRC (big-endian 32 bits).
inline constexpr unsigned char kPngSignature[8] = {137, 'P', 'N', 'G', 13, 10, 26, 10};
inline uint32_t png_be32(const unsigned char* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

struct GrayPng {
  int64_t width = 0, height = 0;
  int depth = 0;  // 8 or 16
};

// Decodes the whole file `bytes` into `out` (one float per pixel, the samples' values) and
// returns its size and depth; nothing (and `out` untouched) when libpng should read the file:
// another kind of PNG, more than `max_pixels` pixels, or any damage. `scratch` holds the
// filtered rows (a buffer the caller keeps between files).
std::optional<GrayPng> decode_gray_png(std::span<const unsigned char> bytes, int64_t max_pixels, ImageBuffer& out,
                                       std::vector<unsigned char>& scratch);

}  // namespace imflow::detail
