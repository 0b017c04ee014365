// Strict gray PNG decoding: chunks walked and CRC-checked here, IDAT inflated in one call
// (zlib_stream.hpp), rows unfiltered and converted to float in one pass (png_gray_decode.hpp).
#include "png_gray_decode.hpp"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/crc32_fast.hpp"
#include "zlib_stream.hpp"

namespace imflow::detail {

namespace {
uint32_t be32(const unsigned char* p) { return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]; }

bool is_letter(unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

// Undoes PNG filter `type` on row `r` (n bytes, BPP bytes per pixel) in place, `prev` being the
// row above already unfiltered (zeros for the first row). False for an unknown filter type. The
// left neighbours are carried in registers: SUB, AVG and PAETH are a chain from byte to byte.
template <size_t BPP>
bool unfilter(int type, unsigned char* r, const unsigned char* prev, size_t n) {
  unsigned left[BPP], up_left[BPP];
  switch (type) {
    case 0: return true;
    case 2:
      for (size_t i = 0; i < n; ++i) r[i] = static_cast<unsigned char>(r[i] + prev[i]);
      return true;
    case 1:
      for (size_t j = 0; j < BPP; ++j) left[j] = r[j];
      for (size_t i = BPP; i < n; i += BPP) {
        for (size_t j = 0; j < BPP; ++j) r[i + j] = static_cast<unsigned char>(left[j] = (r[i + j] + left[j]) & 0xff);
      }
      return true;
    case 3:
      for (size_t j = 0; j < BPP; ++j) r[j] = static_cast<unsigned char>(left[j] = (r[j] + (prev[j] >> 1)) & 0xff);
      for (size_t i = BPP; i < n; i += BPP) {
        for (size_t j = 0; j < BPP; ++j) {
          r[i + j] = static_cast<unsigned char>(left[j] = (r[i + j] + ((left[j] + prev[i + j]) >> 1)) & 0xff);
        }
      }
      return true;
    case 4:
      for (size_t j = 0; j < BPP; ++j) r[j] = static_cast<unsigned char>(left[j] = (r[j] + prev[j]) & 0xff), up_left[j] = prev[j];
      for (size_t i = BPP; i < n; i += BPP) {
        for (size_t j = 0; j < BPP; ++j) {
          const unsigned up = prev[i + j];
          left[j] = (r[i + j] + paeth_predictor(static_cast<int>(left[j]), static_cast<int>(up), static_cast<int>(up_left[j]))) & 0xff;
          r[i + j] = static_cast<unsigned char>(left[j]);
          up_left[j] = up;
        }
      }
      return true;
    default: return false;
  }
}

// Buffers a thread keeps between files; very large ones are given back when a decode ends.
struct Scratch {
  std::vector<unsigned char> idat, raw, zeros;
};

struct TrimAtEnd {
  Scratch& scratch;
  ~TrimAtEnd() {
    for (auto* v : {&scratch.idat, &scratch.raw, &scratch.zeros}) {
      if (v->capacity() > (size_t{64} << 20)) std::vector<unsigned char>().swap(*v);
    }
  }
};
}  // namespace

bool decode_gray_png(const unsigned char* bytes, size_t size, int64_t max_pixels, ImageBuffer& out, int& bit_depth) {
  static constexpr unsigned char kSignature[8] = {137, 'P', 'N', 'G', 13, 10, 26, 10};
  if (size < 8 + 25 || std::memcmp(bytes, kSignature, 8) != 0) return false;
  const unsigned char* ihdr = bytes + 8;
  if (be32(ihdr) != 13 || std::memcmp(ihdr + 4, "IHDR", 4) != 0 || crc32_update(0, ihdr + 4, 17) != be32(ihdr + 21)) return false;
  const uint32_t width = be32(ihdr + 8), height = be32(ihdr + 12);
  const int depth = ihdr[16];
  if (width == 0 || height == 0 || width > 0x7fffffffu || height > 0x7fffffffu) return false;
  if ((depth != 8 && depth != 16) || ihdr[17] != 0 || ihdr[18] != 0 || ihdr[19] != 0 || ihdr[20] != 0) return false;
  if (static_cast<int64_t>(width) * height > max_pixels) return false;

  // Chunks: letters for a type, a length below 2^31, a matching CRC, IDATs in one run, no other
  // critical chunk (PLTE is an error in a gray image), IEND last. Ancillary chunks are skipped.
  thread_local Scratch scratch;
  const TrimAtEnd trim{scratch};
  const unsigned char* first_idat = nullptr;
  size_t idat_bytes = 0, idat_chunks = 0;
  bool idat_run_over = false, ended = false;
  scratch.idat.clear();
  for (size_t at = 8 + 25; !ended;) {
    if (size - at < 12) return false;  // truncated
    const uint32_t length = be32(bytes + at);
    const unsigned char* type = bytes + at + 4;
    if (length > 0x7fffffffu || size - at - 12 < length) return false;
    if (!is_letter(type[0]) || !is_letter(type[1]) || !is_letter(type[2]) || !is_letter(type[3])) return false;
    if (crc32_update(0, type, length + 4) != be32(type + 4 + length)) return false;
    const bool idat = std::memcmp(type, "IDAT", 4) == 0;
    if (idat) {
      if (idat_run_over) return false;
      if (idat_chunks == 1) scratch.idat.assign(first_idat, first_idat + idat_bytes);
      if (idat_chunks == 0) first_idat = type + 4;
      else scratch.idat.insert(scratch.idat.end(), type + 4, type + 4 + length);
      idat_bytes += length;
      ++idat_chunks;
    } else {
      idat_run_over = idat_chunks > 0;
      if (std::memcmp(type, "IEND", 4) == 0) {
        if (length != 0) return false;
        ended = true;
      } else if ((type[0] & 0x20) == 0) {
        return false;  // a critical chunk we do not take
      }
    }
    at += 12 + length;
  }
  if (idat_chunks == 0) return false;
  const unsigned char* stream = idat_chunks == 1 ? first_idat : scratch.idat.data();

  const size_t bpp = static_cast<size_t>(depth / 8), n = width * bpp, stride = n + 1;
  // Deflate expands at most ~1032:1: a header claiming more than the IDATs can hold is left to
  // libpng (which fails it) before anything that large is allocated.
  if (stride * height / 1032 > idat_bytes + 1) return false;
  scratch.raw.resize(stride * height);
  if (!zlib_inflate_exact(stream, idat_bytes, scratch.raw.data(), scratch.raw.size())) return false;
  scratch.zeros.assign(n, 0);
  out.resize(width, height);
  const unsigned char* prev = scratch.zeros.data();
  for (size_t y = 0; y < height; ++y) {
    unsigned char* row = scratch.raw.data() + y * stride + 1;
    if (!(bpp == 1 ? unfilter<1>(row[-1], row, prev, n) : unfilter<2>(row[-1], row, prev, n))) return false;
    float* values = out.data() + y * width;
    if (depth == 8) {
      for (size_t x = 0; x < width; ++x) values[x] = static_cast<float>(row[x]);
    } else {
      for (size_t x = 0; x < width; ++x) values[x] = static_cast<float>(row[2 * x] << 8 | row[2 * x + 1]);
    }
    prev = row;
  }
  bit_depth = depth;
  return true;
}

}  // namespace imflow::detail
