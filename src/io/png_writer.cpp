// PNG output through libpng: 8- or 16-bit grayscale, rounded and clamped, written atomically.
#include <png.h>
#include <zlib.h>

#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <vector>

#include "imflow/errors.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/png.hpp"

namespace imflow {

namespace {
// Nearest integer, halves up, clamped to [0, max]; NaN -> 0: value + 0.5 is exact in double and
// truncation floors a non-negative number. (GCC 12 does not vectorize the loops below: the
// NaN-safe clamps stay branches.)
inline uint32_t to_sample(float value, double max) {
  double v = value;
  v = v > 0.0 ? v : 0.0;  // also NaN
  v = v < max ? v : max;
  return static_cast<uint32_t>(v + 0.5);
}

// `count` samples of 8 bits, or of 16 bits big-endian (PNG's byte order), from `values`.
void to_samples(const float* values, int64_t count, int bit_depth, png_byte* out) {
  if (bit_depth == 8) {
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<png_byte>(to_sample(values[i], 255.0));
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t sample = to_sample(values[i], 65535.0);
    out[2 * i] = static_cast<png_byte>(sample >> 8);
    out[2 * i + 1] = static_cast<png_byte>(sample & 0xff);
  }
}

void png_error_to_exception(png_structp png, png_const_charp message) {
  auto* text = static_cast<std::string*>(png_get_error_ptr(png));
  if (text != nullptr) *text = message;
  png_longjmp(png, 1);
}
// libpng reports errors by longjmp: keep that inside this function, with nothing to unwind.
bool encode(FILE* file, png_bytep* rows, int64_t width, int64_t height, int bit_depth, int compression,
            std::string& error) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &error, png_error_to_exception, nullptr);
  if (png == nullptr) return false;
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png)) != 0) {
    png_destroy_write_struct(&png, info != nullptr ? &info : nullptr);
    return false;
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), bit_depth,
               PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  // output.png_compression (docs/mri.md): zlib level 0..9. Levels 0..5 use one fixed filter (none
  // for 0, SUB otherwise) instead of libpng's adaptive per-row search, and 1..5 zlib's run-length
  // strategy (Z_RLE): on MRI slices, whose SUB-filtered rows are mostly runs, it deflates ~1.8x
  // faster than the default strategy and into smaller files; 6..9 keep the search and the default.
  png_set_compression_level(png, compression);
  if (compression == 0) {
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
  } else if (compression <= 5) {
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
    png_set_compression_strategy(png, Z_RLE);
  }
  png_set_rows(png, info, rows);
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}
}  // namespace

void write_png_gray(const std::filesystem::path& path, ConstImageView image, int bit_depth, int compression) {
  if (bit_depth != 8 && bit_depth != 16) throw OutputError(path.string() + ": PNG bit depth must be 8 or 16");
  if (compression < 0 || compression > 9) throw OutputError(path.string() + ": PNG compression level must be 0..9");
  if (image.width <= 0 || image.height <= 0 || image.width > 0x7fffffff || image.height > 0x7fffffff) {
    throw OutputError(path.string() + ": cannot write an empty or oversized image as PNG");
  }
  // Rows converted before libpng is involved, so nothing below needs C++ cleanup on longjmp.
  const size_t row_bytes = static_cast<size_t>(image.width) * (bit_depth / 8);
  std::vector<png_byte> bytes(row_bytes * static_cast<size_t>(image.height));
  to_samples(image.data, image.size(), bit_depth, bytes.data());  // rows are contiguous
  std::vector<png_bytep> rows(static_cast<size_t>(image.height));
  for (size_t y = 0; y < rows.size(); ++y) rows[y] = bytes.data() + y * row_bytes;

  AtomicOutput output(path);
  FILE* file = std::fopen(output.temp_path().c_str(), "wb");
  if (file == nullptr) throw OutputError(output.temp_path().string() + ": cannot open for writing");
  std::string error = "out of memory";
  const bool encoded = encode(file, rows.data(), image.width, image.height, bit_depth, compression, error);
  const bool closed = std::fclose(file) == 0;
  if (!encoded || !closed) throw OutputError(path.string() + ": cannot write PNG: " + (encoded ? "close failed" : error));
  output.commit();
}

}  // namespace imflow
