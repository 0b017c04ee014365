// PNG output through libpng: 8- or 16-bit grayscale, rounded and clamped, encoded in memory and
// written with one write() into a file published only when complete (AtomicFileWriter). At
// levels 1..5 the image data is deflated by libdeflate (below); libpng writes the file's chunks.
#include <libdeflate.h>
#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "imflow/errors.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/png.hpp"
#include "imflow/io/written_text.hpp"
#include "imflow/trace.hpp"
#include "png_memory.hpp"

namespace imflow {

namespace {
// Nearest integer, halves up, clamped to [0, max]; NaN -> 0. Exact in float: the clamps only
// select, and for 0 <= v <= 65535 both trunc(v) and v - trunc(v) are exact, so this is
// floor(v + 0.5) with no rounding error. The loops below vectorize because this file is built with
// -fno-trapping-math (src/CMakeLists.txt), which changes no value.
inline uint32_t to_sample(float value, float max) {
  float v = value > 0.0f ? value : 0.0f;  // also NaN
  v = v < max ? v : max;
  const auto whole = static_cast<int32_t>(v);
  return static_cast<uint32_t>(whole + (v - static_cast<float>(whole) >= 0.5f ? 1 : 0));
}

// `count` samples of 8 bits, or of 16 bits big-endian (PNG's byte order), from `values`, each
// first mapped by `map`.
template <typename Map>
inline void to_samples(const float* values, int64_t count, int bit_depth, png_byte* out, Map map) {
  if (bit_depth == 8) {
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<png_byte>(to_sample(map(values[i]), 255.0f));
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t sample = to_sample(map(values[i]), 65535.0f);
    out[2 * i] = static_cast<png_byte>(sample >> 8);
    out[2 * i + 1] = static_cast<png_byte>(sample & 0xff);
  }
}

// The loops above as they are, and compiled for AVX2 where the CPU has it (chosen when the program
// loads): ~2.3x faster, the same samples (no FMA: each multiply and add rounds as before).
#if defined(__x86_64__) && defined(__GNUC__)
#define IMFLOW_SAMPLE_LOOPS __attribute__((target_clones("avx2", "default")))
#else
#define IMFLOW_SAMPLE_LOOPS
#endif
IMFLOW_SAMPLE_LOOPS void samples_of(const float* values, int64_t count, int bit_depth, png_byte* out) {
  to_samples(values, count, bit_depth, out, [](float v) { return v; });
}
IMFLOW_SAMPLE_LOOPS void samples_of_mapped(const float* values, int64_t count, int bit_depth, png_byte* out,
                                           double scale, double offset) {
  to_samples(values, count, bit_depth, out, [scale, offset](float v) { return static_cast<float>(v * scale + offset); });
}

// This thread's buffers, kept between files: the samples, the row pointers, the encoded file,
// and for libdeflate the filtered rows, their zlib stream and the compressor of each level.
struct LibdeflateCompressor {
  libdeflate_compressor* compressor = nullptr;
  LibdeflateCompressor() = default;
  LibdeflateCompressor(const LibdeflateCompressor&) = delete;
  LibdeflateCompressor& operator=(const LibdeflateCompressor&) = delete;
  ~LibdeflateCompressor() { libdeflate_free_compressor(compressor); }
};
struct WriteBuffers {
  std::vector<png_byte> samples;
  std::vector<png_bytep> rows;
  std::vector<unsigned char> encoded;
  std::vector<unsigned char> filtered, deflated;
  LibdeflateCompressor compressors[6];  // levels 1..5
};
thread_local WriteBuffers buffers;

// Levels 1..5 of images up to this many filtered bytes deflate with libdeflate, in one call over
// the whole image (larger ones stream through zlib, which needs no second copy of the image).
constexpr size_t kLibdeflateMaxBytes = size_t{256} << 20;
bool uses_libdeflate(int compression, size_t filtered_bytes) {
  return compression >= 1 && compression <= 5 && filtered_bytes <= kLibdeflateMaxBytes;
}

// The rows as PNG's filter type 2 (UP): a filter byte, then each byte minus the one above it.
void filter_up(const png_byte* samples, size_t row_bytes, size_t height, png_byte* out) {
  for (size_t y = 0; y < height; ++y) {
    const png_byte* row = samples + y * row_bytes;
    png_byte* to = out + y * (row_bytes + 1);
    to[0] = 2;
    if (y == 0) {
      std::memcpy(to + 1, row, row_bytes);
      continue;
    }
    const png_byte* above = row - row_bytes;
    for (size_t i = 0; i < row_bytes; ++i) to[1 + i] = static_cast<png_byte>(row[i] - above[i]);
  }
}

// The zlib stream of the UP-filtered rows at libdeflate's `level` into buffers.deflated; false
// when libdeflate cannot allocate its compressor.
bool deflate_rows(size_t row_bytes, size_t height, int level, size_t& size) {
  buffers.filtered.resize((row_bytes + 1) * height);
  filter_up(buffers.samples.data(), row_bytes, height, buffers.filtered.data());
  libdeflate_compressor*& compressor = buffers.compressors[level].compressor;
  if (compressor == nullptr) compressor = libdeflate_alloc_compressor(level);
  if (compressor == nullptr) return false;
  buffers.deflated.resize(libdeflate_zlib_compress_bound(compressor, buffers.filtered.size()));
  size = libdeflate_zlib_compress(compressor, buffers.filtered.data(), buffers.filtered.size(),
                                  buffers.deflated.data(), buffers.deflated.size());
  return size > 0;  // the bound always fits
}

void png_error_to_exception(png_structp png, png_const_charp message) {
  auto* text = static_cast<std::string*>(png_get_error_ptr(png));
  if (text != nullptr) *text = message;
  png_longjmp(png, 1);
}

void append_to_buffer(png_structp png, png_bytep data, size_t length) {
  auto* encoded = static_cast<std::vector<unsigned char>*>(png_get_io_ptr(png));
  try {
    encoded->insert(encoded->end(), data, data + length);
  } catch (const std::bad_alloc&) {
    png_error(png, "out of memory");
  }
}

void no_flush(png_structp) {}

// libpng reports errors by longjmp: keep that inside this function, with nothing to unwind.
// `deflated` (a zlib stream of filtered rows, or null): written as the image's IDAT data instead
// of libpng compressing `rows`.
bool encode(png_bytep* rows, int64_t width, int64_t height, int bit_depth, int compression,
            const std::vector<unsigned char>* deflated, size_t deflated_size, std::vector<unsigned char>& encoded,
            std::string& error) {
  png_structp png = png_create_write_struct_2(PNG_LIBPNG_VER_STRING, &error, png_error_to_exception, nullptr, nullptr,
                                              detail::png_cached_malloc, detail::png_cached_free);
  if (png == nullptr) return false;
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png)) != 0) {
    png_destroy_write_struct(&png, info != nullptr ? &info : nullptr);
    return false;
  }
  png_set_write_fn(png, &encoded, append_to_buffer, no_flush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), bit_depth,
               PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  // output.png_compression (docs/mri.md): zlib level 0..9. Levels 0..5 use one fixed filter (none
  // for 0, UP otherwise) instead of libpng's adaptive per-row search, and 1..5 zlib's run-length
  // strategy (Z_RLE): on MRI slices, whose UP-filtered rows are mostly runs, it deflates ~1.8x
  // faster than the default strategy and into smaller files (UP: 3.5% smaller than SUB, as fast);
  // 6..9 keep the search and the default strategy.
  png_set_compression_level(png, compression);
  if (compression == 0) {
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
  } else if (compression <= 5) {
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
    png_set_compression_strategy(png, Z_RLE);
  }
  if (deflated != nullptr) {
    // Signature and IHDR from libpng, then the image data and IEND as chunks libpng frames (length,
    // type, CRC); IDAT chunks of at most 1 GiB, under PNG's 2^31 - 1 limit.
    png_write_info(png, info);
    constexpr size_t kIdatBytes = size_t{1} << 30;
    for (size_t done = 0; done < deflated_size; done += kIdatBytes) {
      png_write_chunk(png, reinterpret_cast<png_const_bytep>("IDAT"), deflated->data() + done,
                      std::min(kIdatBytes, deflated_size - done));
    }
    png_write_chunk(png, reinterpret_cast<png_const_bytep>("IEND"), nullptr, 0);
  } else {
    png_set_rows(png, info, rows);
    png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  }
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

void write_png_gray(const std::filesystem::path& path, ConstImageView image, int bit_depth, int compression,
                    const PngSampleMap* map) {
  if (bit_depth != 8 && bit_depth != 16) throw OutputError(path.string() + ": PNG bit depth must be 8 or 16");
  if (compression < 0 || compression > 9) throw OutputError(path.string() + ": PNG compression level must be 0..9");
  if (image.width <= 0 || image.height <= 0 || image.width > 0x7fffffff || image.height > 0x7fffffff) {
    throw OutputError(path.string() + ": cannot write an empty or oversized image as PNG");
  }
  forget_written_text(buffers.encoded.data());  // the last file's bytes are about to change
  // Rows converted before libpng is involved, so nothing below needs C++ cleanup on longjmp.
  const detail::TrimOnExit trim(buffers.samples, buffers.rows, buffers.encoded, buffers.filtered, buffers.deflated);
  const size_t row_bytes = static_cast<size_t>(image.width) * (bit_depth / 8);
  buffers.samples.resize(row_bytes * static_cast<size_t>(image.height));
  {
    TracePart part("png samples");
    if (map != nullptr) {  // rows are contiguous
      samples_of_mapped(image.data, image.size(), bit_depth, buffers.samples.data(), map->scale, map->offset);
    } else {
      samples_of(image.data, image.size(), bit_depth, buffers.samples.data());
    }
  }
  buffers.rows.resize(static_cast<size_t>(image.height));
  for (size_t y = 0; y < buffers.rows.size(); ++y) buffers.rows[y] = buffers.samples.data() + y * row_bytes;
  buffers.encoded.clear();
  buffers.encoded.reserve(buffers.samples.size() / 2 + 1024);

  std::string error = "out of memory";
  size_t deflated_size = 0;
  const size_t height = static_cast<size_t>(image.height);
  const bool libdeflate = uses_libdeflate(compression, (row_bytes + 1) * height);
  {
    TracePart part("png deflate");
    if (libdeflate && !deflate_rows(row_bytes, height, compression, deflated_size)) {
      throw OutputError(path.string() + ": cannot write PNG: libdeflate: out of memory");
    }
  }
  {
    TracePart part("png chunks");
    const bool encoded = encode(buffers.rows.data(), image.width, image.height, bit_depth, compression,
                                libdeflate ? &buffers.deflated : nullptr, deflated_size, buffers.encoded, error);
    if (!encoded) throw OutputError(path.string() + ": cannot write PNG: " + error);
  }
  TracePart part("png file");
  const std::string_view bytes(reinterpret_cast<const char*>(buffers.encoded.data()), buffers.encoded.size());
  AtomicFileWriter output(path);
  output.write(bytes);
  output.commit();
  // Unless trimmed on the way out, the buffer holds the file's bytes until this thread's next PNG:
  // the item's manifest CRC reads them there.
  if (detail::keeps_thread_buffer(buffers.encoded)) note_written_text(path, bytes);
}

}  // namespace imflow
