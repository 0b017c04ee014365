// PNG input: 8/16-bit grayscale as stored, 1/2/4-bit gray expanded to 8 bits (x255, x85, x17),
// palette/RGB/RGBA -> luminance. Plain 8/16-bit grayscale files are decoded with libdeflate
// (png_gray_decode.hpp); the others, and any file that path does not take whole, through libpng
// (Debian's libpng16), which checks what a damaged file breaks (critical chunks' CRCs, the zlib
// stream and its Adler-32, truncation, IEND, palette indices), so such a file fails naming why
// instead of decoding to wrong pixels. Each file is read with one pread (up to 256 MiB; larger ones
// are read as libpng asks) into a buffer that the thread keeps for its next file, as it keeps
// libpng's and zlib's working memory (png_memory.hpp).
#include <png.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <csetjmp>
#include <cstring>
#include <string>
#include <vector>

#include "imflow/errors.hpp"
#include "imflow/io/png.hpp"
#include "luminance.hpp"
#include "png_gray_decode.hpp"
#include "png_memory.hpp"
#include "read_only_file.hpp"

namespace imflow {

namespace {
// Where libpng reads from: the file's bytes in memory, or the file itself past kMemoryDecodeBytes.
struct PngBytes {
  const std::vector<unsigned char>* bytes = nullptr;
  int fd = -1;
  int64_t size = 0;
  int64_t at = 0;
};

// What a decode produced, or why it failed. Lives outside the frame that calls setjmp: nothing
// there is modified between setjmp and libpng's longjmp.
struct Decoding {
  char error[200] = {};
  int64_t width = 0, height = 0;
  int stored_depth = 0, colour_type = 0, channels = 0, depth = 0;
  int palette_entries = 0;
  png_color palette[256] = {};
  std::vector<unsigned char>& pixels;  // rows after the transforms below (palette: 1 index per byte); 16-bit samples in host order
  std::vector<png_bytep>& rows;
};

// This thread's buffers, kept between files: the file's bytes, the decoded rows, their pointers.
struct ReadBuffers {
  std::vector<unsigned char> file, pixels;
  std::vector<png_bytep> rows;
};
thread_local ReadBuffers buffers;

void on_error(png_structp png, png_const_charp message) {
  auto* decoding = static_cast<Decoding*>(png_get_error_ptr(png));
  std::snprintf(decoding->error, sizeof decoding->error, "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // ancillary problems (iCCP, text): the pixels are fine

// libpng reads the next chunk when the file has ended: between chunks (no IEND) or inside one.
const char* short_file_text(const PngBytes& source) {
  return source.at == source.size ? "truncated file (it ends after a whole chunk, without IEND)"
                                   : "truncated file (it ends inside a chunk)";
}

void read_from_source(png_structp png, png_bytep out, size_t length) {
  auto* source = static_cast<PngBytes*>(png_get_io_ptr(png));
  if (static_cast<int64_t>(length) > source->size - source->at) png_error(png, short_file_text(*source));
  if (source->bytes != nullptr) {
    std::memcpy(out, source->bytes->data() + source->at, length);
  } else {
    size_t done = 0;
    while (done < length) {
      const ssize_t got = ::pread(source->fd, out + done, length - done, source->at + static_cast<int64_t>(done));
      if (got <= 0) png_error(png, got == 0 ? short_file_text(*source) : "read error");
      done += static_cast<size_t>(got);
    }
  }
  source->at += static_cast<int64_t>(length);
}

// Decodes the whole image into `d`; false (d.error says why) when libpng fails or the image has
// more than max_pixels pixels (d.error empty then, d.width/height set).
bool decode(PngBytes& source, int64_t max_pixels, Decoding& d) {
  png_structp png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &d, on_error, on_warning, nullptr,
                                             detail::png_cached_malloc, detail::png_cached_free);
  if (png == nullptr) {
    std::snprintf(d.error, sizeof d.error, "out of memory");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    if (d.error[0] == '\0') std::snprintf(d.error, sizeof d.error, "out of memory");
    png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr);
    return false;
  }
  png_set_read_fn(png, &source, read_from_source);
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);  // PNG's own bound; max_pixels is checked below
  png_read_info(png, info);
  d.width = png_get_image_width(png, info);
  d.height = png_get_image_height(png, info);
  d.stored_depth = png_get_bit_depth(png, info);
  d.colour_type = png_get_color_type(png, info);
  if (d.width * d.height > max_pixels) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  if (d.colour_type == PNG_COLOR_TYPE_PALETTE) {  // indices, one per byte: read_png checks and maps them
    png_colorp palette = nullptr;
    if (png_get_PLTE(png, info, &palette, &d.palette_entries) == 0) png_error(png, "palette image without a PLTE chunk");
    std::copy(palette, palette + std::min(d.palette_entries, 256), d.palette);
    png_set_packing(png);
  }
  if (d.colour_type == PNG_COLOR_TYPE_GRAY && d.stored_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (d.stored_depth == 16 && std::endian::native == std::endian::little) png_set_swap(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  d.channels = png_get_channels(png, info);
  d.depth = png_get_bit_depth(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  d.pixels.resize(row_bytes * static_cast<size_t>(d.height));
  d.rows.resize(static_cast<size_t>(d.height));
  for (size_t r = 0; r < d.rows.size(); ++r) d.rows[r] = d.pixels.data() + r * row_bytes;
  png_read_image(png, d.rows.data());
  png_read_end(png, nullptr);  // the rest of the zlib stream (Adler-32), the chunks after it, IEND
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

// Up to `limit` bytes from the start of the file into `bytes`; `whole` tells whether that is all
// of it. Throws InputError naming the file when it cannot be opened or read.
void read_prefix(const detail::ReadOnlyFile& file, const std::filesystem::path& path, int64_t limit, bool& whole,
                 std::vector<unsigned char>& bytes) {
  const int64_t wanted = std::min(limit, file.size());
  bytes.resize(static_cast<size_t>(wanted));
  detail::pread_exactly(file, bytes.data(), wanted, 0, path, "PNG");
  whole = wanted == file.size();
}

[[noreturn]] void not_png(const std::filesystem::path& path, const std::string& why) {
  throw InputError(path.string() + ": not a readable PNG image (" + why + ")");
}

// Files up to this size are decoded from memory (one read); larger ones as libpng reads them.
constexpr int64_t kMemoryDecodeBytes = int64_t{256} << 20;

// Deflate writes at most 1032 bytes for every byte it stores (a 258-byte match in 2 bits).
constexpr int64_t kDeflateMaxRatio = 1032;

// The signature and the IHDR chunk (the first 33 of `head`), checked as libpng would (CRC, sizes,
// depths), and the image's filtered rows against what a file of `file_size` bytes can inflate to:
// a damaged header's 2^31 rows would otherwise take gigabytes before the data is found short.
PngInfo header_info(const std::filesystem::path& path, const std::vector<unsigned char>& head, int64_t file_size) {
  if (head.size() < 8 || std::memcmp(head.data(), detail::kPngSignature, 8) != 0) not_png(path, "no PNG signature");
  if (head.size() < 33) not_png(path, "truncated file (it ends inside the IHDR chunk)");
  if (detail::png_be32(&head[8]) != 13 || std::memcmp(&head[12], "IHDR", 4) != 0) not_png(path, "the first chunk is not a 13-byte IHDR");
  if (crc32(0, &head[12], 17) != detail::png_be32(&head[29])) not_png(path, "IHDR: CRC error");
  const uint32_t width = detail::png_be32(&head[16]), height = detail::png_be32(&head[20]);
  const int depth = head[24], colour = head[25];
  const bool depth_ok = (colour == 0 && (depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16)) ||
                        (colour == 3 && (depth == 1 || depth == 2 || depth == 4 || depth == 8)) ||
                        ((colour == 2 || colour == 4 || colour == 6) && (depth == 8 || depth == 16));
  if (width == 0 || height == 0 || width > 0x7fffffffu || height > 0x7fffffffu) not_png(path, "IHDR: invalid image size");
  if (!depth_ok) not_png(path, "IHDR: invalid bit depth " + std::to_string(depth) + " for colour type " + std::to_string(colour));
  if (head[26] != 0 || head[27] != 0 || head[28] > 1) not_png(path, "IHDR: unknown compression, filter or interlace method");
  PngInfo info;
  info.width = width;
  info.height = height;
  info.bit_depth = depth == 16 ? 16 : 8;
  info.channels = colour == 0 ? 1 : colour == 4 ? 2 : colour == 6 ? 4 : 3;
  const int64_t samples = colour == 3 ? 1 : info.channels;
  const int64_t filtered = static_cast<int64_t>(height) * (1 + (static_cast<int64_t>(width) * samples * depth + 7) / 8);
  if (filtered / kDeflateMaxRatio > file_size) {
    not_png(path, "IHDR: " + std::to_string(width) + "x" + std::to_string(height) + " pixels cannot be held by a file of " +
                      std::to_string(file_size) + " bytes (a damaged header?)");
  }
  return info;
}
}  // namespace

PngInfo scan_png(const std::filesystem::path& path) {
  const detail::ReadOnlyFile file(path);
  bool whole = false;
  std::vector<unsigned char> head;
  read_prefix(file, path, 33, whole, head);
  return header_info(path, head, file.size());
}

int64_t read_png(const std::filesystem::path& path, ImageBuffer& out, const ReadLimits& limits, int* bit_depth) {
  const detail::ReadOnlyFile file(path);
  const detail::TrimOnExit trim(buffers.file, buffers.pixels, buffers.rows);
  bool whole = false;
  std::vector<unsigned char>& bytes = buffers.file;
  read_prefix(file, path, kMemoryDecodeBytes, whole, bytes);
  header_info(path, bytes, file.size());
  if (whole) {
    if (const auto gray = detail::decode_gray_png(bytes, limits.max_pixels, out, buffers.pixels)) {
      if (bit_depth != nullptr) *bit_depth = gray->depth;
      return gray->width * gray->height * (gray->depth / 8);
    }
  }
  PngBytes source;
  source.bytes = whole ? &bytes : nullptr;
  source.fd = file.fd();
  source.size = file.size();
  Decoding d{.pixels = buffers.pixels, .rows = buffers.rows};
  if (!decode(source, limits.max_pixels, d)) {
    if (d.error[0] != '\0') throw InputError(path.string() + ": cannot decode the PNG (" + std::string(d.error) + ")");
    throw InputError(path.string() + ": PNG of " + std::to_string(d.width) + "x" + std::to_string(d.height) +
                     " pixels exceeds the limit of " + std::to_string(limits.max_pixels) + " pixels per image");
  }
  const int64_t count = d.width * d.height;
  out.resize(d.width, d.height);
  bool coloured = false;
  if (d.colour_type == PNG_COLOR_TYPE_PALETTE) {
    // libpng would expand an index past the PLTE's entries as black, saying nothing: that is damage.
    const unsigned char* index = d.pixels.data();
    std::vector<unsigned char> rgb(static_cast<size_t>(count) * 3);
    for (int64_t i = 0; i < count; ++i) {
      if (index[i] >= d.palette_entries) {
        throw InputError(path.string() + ": corrupt PNG: palette index beyond the " + std::to_string(d.palette_entries) +
                         " PLTE entries (pixel " + std::to_string(i % d.width) + "," + std::to_string(i / d.width) + ")");
      }
      const png_color& colour = d.palette[index[i]];
      rgb[3 * i] = colour.red, rgb[3 * i + 1] = colour.green, rgb[3 * i + 2] = colour.blue;
    }
    d.channels = 3;
    coloured = detail::interleaved_to_gray(rgb.data(), 3, count, out.data());
  } else if (d.depth == 16) {
    coloured = detail::interleaved_to_gray(reinterpret_cast<const uint16_t*>(d.pixels.data()), d.channels, count, out.data());
  } else {
    coloured = detail::interleaved_to_gray(d.pixels.data(), d.channels, count, out.data());
  }
  if (coloured) {
    spdlog::warn("{}: colour PNG ({} channels) converted to luminance 0.299 R + 0.587 G + 0.114 B", path.string(), d.channels);
  }
  if (bit_depth != nullptr) *bit_depth = d.depth;
  return count * d.channels * (d.depth / 8);
}

}  // namespace imflow
