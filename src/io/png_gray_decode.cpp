// decode_gray_png: 8/16-bit grayscale, non-interlaced PNGs with libdeflate (png_gray_decode.hpp).
#include "png_gray_decode.hpp"

#include <libdeflate.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "png_memory.hpp"

namespace imflow::detail {

namespace {
bool is_letter(unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

// This thread's decompressor, made on its first PNG.
struct Decompressor {
  libdeflate_decompressor* state = libdeflate_alloc_decompressor();
  ~Decompressor() { libdeflate_free_decompressor(state); }
};

struct Chunk {
  uint32_t length = 0;
  const unsigned char* type = nullptr;  // then the data, then the CRC
};

// The chunk at `at`, when it lies whole inside the file with a letters-only type and a matching
// CRC; nothing otherwise.
std::optional<Chunk> chunk_at(std::span<const unsigned char> bytes, size_t at) {
  if (bytes.size() < 12 || at > bytes.size() - 12) return std::nullopt;
  const uint32_t length = png_be32(&bytes[at]);
  if (length > 0x7fffffffu || length > bytes.size() - 12 - at) return std::nullopt;
  const unsigned char* type = &bytes[at + 4];
  if (!std::all_of(type, type + 4, is_letter)) return std::nullopt;
  if (libdeflate_crc32(0, type, 4 + size_t{length}) != png_be32(type + 4 + length)) return std::nullopt;
  return Chunk{length, type};
}

// PNG's Paeth predictor: of left, up and up-left, the one nearest to left + up - up-left (ties
// in that order).
inline int paeth(int left, int up, int up_left) {
  const int to_up = up - up_left, to_left = left - up_left;
  const int pa = std::abs(to_up), pb = std::abs(to_left), pc = std::abs(to_up + to_left);
  int predicted = left, nearest = pa;
  if (pb < nearest) predicted = up, nearest = pb;
  if (pc < nearest) predicted = up_left;
  return predicted;
}

// Undoes one row's filter in place; `previous` is the row above, unfiltered (zeros for the first).
template <size_t Bpp>
void unfilter_row(unsigned char filter, unsigned char* row, const unsigned char* previous, size_t size) {
  switch (filter) {
    case 1:  // Sub
      for (size_t i = Bpp; i < size; ++i) row[i] = static_cast<unsigned char>(row[i] + row[i - Bpp]);
      break;
    case 2:  // Up
      for (size_t i = 0; i < size; ++i) row[i] = static_cast<unsigned char>(row[i] + previous[i]);
      break;
    case 3:  // Average
      for (size_t i = 0; i < Bpp; ++i) row[i] = static_cast<unsigned char>(row[i] + (previous[i] >> 1));
      for (size_t i = Bpp; i < size; ++i) row[i] = static_cast<unsigned char>(row[i] + ((row[i - Bpp] + previous[i]) >> 1));
      break;
    case 4: {  // Paeth: left and up-left carried in registers (the loop's chain is left's)
      int left[Bpp], up_left[Bpp];
      for (size_t k = 0; k < Bpp; ++k) {
        left[k] = row[k] = static_cast<unsigned char>(row[k] + previous[k]);
        up_left[k] = previous[k];
      }
      for (size_t i = Bpp; i + Bpp <= size; i += Bpp) {
        for (size_t k = 0; k < Bpp; ++k) {
          const int up = previous[i + k];
          left[k] = (row[i + k] + paeth(left[k], up, up_left[k])) & 0xff;
          row[i + k] = static_cast<unsigned char>(left[k]);
          up_left[k] = up;
        }
      }
      break;
    }
    default:  // None
      break;
  }
}

// One unfiltered row's samples (big-endian when 16-bit) as floats.
template <size_t Bpp>
void row_to_floats(const unsigned char* __restrict row, int64_t width, float* __restrict samples) {
  for (int64_t x = 0; x < width; ++x) {
    if constexpr (Bpp == 1) samples[x] = static_cast<float>(row[x]);
    else samples[x] = static_cast<float>(row[2 * x] << 8 | row[2 * x + 1]);
  }
}

// Unfilters the rows (`filtered`: each row's filter byte, then its bytes) and writes the samples
// as floats, a row at a time while it is in cache.
template <size_t Bpp>
void unfilter_to_floats(unsigned char* filtered, const unsigned char* zeros, int64_t width, int64_t height, float* out) {
  const size_t row_bytes = static_cast<size_t>(width) * Bpp;
  const unsigned char* previous = zeros;
  for (int64_t y = 0; y < height; ++y) {
    unsigned char* row = filtered + static_cast<size_t>(y) * (row_bytes + 1);
    unfilter_row<Bpp>(row[0], row + 1, previous, row_bytes);
    row_to_floats<Bpp>(row + 1, width, out + y * width);
    previous = row + 1;
  }
}

}  // namespace

std::optional<GrayPng> decode_gray_png(std::span<const unsigned char> bytes, int64_t max_pixels, ImageBuffer& out,
                                       std::vector<unsigned char>& scratch) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kPngSignature, 8) != 0) return std::nullopt;
  const std::optional<Chunk> header = chunk_at(bytes, 8);
  if (!header || header->length != 13 || std::memcmp(header->type, "IHDR", 4) != 0) return std::nullopt;
  const unsigned char* ihdr = header->type + 4;
  GrayPng png;
  png.width = png_be32(ihdr);
  png.height = png_be32(ihdr + 4);
  png.depth = ihdr[8];
  // Grayscale, 8 or 16 bits, deflate, adaptive filters, not interlaced.
  if (ihdr[9] != 0 || (png.depth != 8 && png.depth != 16) || ihdr[10] != 0 || ihdr[11] != 0 || ihdr[12] != 0) {
    return std::nullopt;
  }
  if (png.width == 0 || png.height == 0 || png.width > 0x7fffffff || png.height > 0x7fffffff ||
      png.width > max_pixels / png.height) {
    return std::nullopt;
  }
  // The IDAT chunks (one run of them) up to IEND; ancillary chunks are skipped, anything else
  // (PLTE, an unknown critical chunk, IDATs apart) is libpng's to judge.
  thread_local std::vector<unsigned char> joined;
  const TrimOnExit trim(joined);
  joined.clear();
  const unsigned char* stream = nullptr;
  size_t stream_size = 0;
  int idat_chunks = 0;
  bool idat_run_over = false, ended = false;
  for (size_t at = 8 + 12 + header->length; !ended;) {
    const std::optional<Chunk> chunk = chunk_at(bytes, at);
    if (!chunk) return std::nullopt;
    const unsigned char* data = chunk->type + 4;
    if (std::memcmp(chunk->type, "IDAT", 4) == 0) {
      if (idat_run_over) return std::nullopt;
      if (++idat_chunks == 2) joined.assign(stream, stream + stream_size);
      if (idat_chunks >= 2) joined.insert(joined.end(), data, data + chunk->length);
      else stream = data, stream_size = chunk->length;
    } else if (std::memcmp(chunk->type, "IEND", 4) == 0) {
      if (chunk->length != 0 || idat_chunks == 0) return std::nullopt;
      ended = true;
    } else if (chunk->type[0] >= 'a') {  // ancillary
      idat_run_over = idat_chunks > 0;
    } else {
      return std::nullopt;
    }
    at += 12 + size_t{chunk->length};
  }
  if (idat_chunks >= 2) stream = joined.data(), stream_size = joined.size();
  // The filtered rows, after a row of zeros (the row above the first).
  const size_t bpp = static_cast<size_t>(png.depth / 8);
  const size_t row_bytes = static_cast<size_t>(png.width) * bpp;
  const size_t filtered_bytes = (row_bytes + 1) * static_cast<size_t>(png.height);
  scratch.assign(row_bytes, 0);
  scratch.resize(row_bytes + filtered_bytes);
  thread_local Decompressor decompressor;
  if (decompressor.state == nullptr) return std::nullopt;
  size_t used = 0, made = 0;
  if (libdeflate_zlib_decompress_ex(decompressor.state, stream, stream_size, scratch.data() + row_bytes, filtered_bytes,
                                    &used, &made) != LIBDEFLATE_SUCCESS ||
      used != stream_size || made != filtered_bytes) {
    return std::nullopt;
  }
  unsigned char* filtered = scratch.data() + row_bytes;
  for (int64_t y = 0; y < png.height; ++y) {
    if (filtered[static_cast<size_t>(y) * (row_bytes + 1)] > 4) return std::nullopt;
  }
  out.resize(png.width, png.height);
  if (bpp == 1) unfilter_to_floats<1>(filtered, scratch.data(), png.width, png.height, out.data());
  else unfilter_to_floats<2>(filtered, scratch.data(), png.width, png.height, out.data());
  return png;
}

}  // namespace imflow::detail
