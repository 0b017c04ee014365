// PNG output: 8- or 16-bit grayscale, rounded and clamped, filtered and deflated here in one
// buffer (zlib_stream.hpp) and written atomically with one write; each thread reuses its buffers.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/crc32_fast.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/png.hpp"
#include "png_gray_decode.hpp"
#include "zlib_stream.hpp"

namespace imflow {

namespace {
// Nearest integer, halves up, clamped to [0, max]; NaN -> 0: value + 0.5 is exact in double and
// truncation floors a non-negative number (below 2^31: int32 conversion, which vectorizes).
inline int32_t to_sample(float value, double max) {
  double v = value;
  v = v > 0.0 ? v : 0.0;  // also NaN
  v = v < max ? v : max;
  return static_cast<int32_t>(v + 0.5);
}

// One row of samples, 8 bits or 16 bits big-endian (PNG's byte order), from `values`, each first
// taken through `map` (as a float image holding value * scale + offset would be) when it is set.
void row_samples(const float* values, int64_t count, int bit_depth, const PngValueMap* map, unsigned char* out) {
  const double max = bit_depth == 8 ? 255.0 : 65535.0;
  if (map != nullptr) {
    const double scale = map->scale, offset = map->offset;
    for (int64_t i = 0; i < count; ++i) {
      const int32_t s = to_sample(static_cast<float>(values[i] * scale + offset), max);
      if (bit_depth == 8) out[i] = static_cast<unsigned char>(s);
      else out[2 * i] = static_cast<unsigned char>(s >> 8), out[2 * i + 1] = static_cast<unsigned char>(s);
    }
    return;
  }
  if (bit_depth == 8) {
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<unsigned char>(to_sample(values[i], max));
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const int32_t s = to_sample(values[i], max);
    out[2 * i] = static_cast<unsigned char>(s >> 8);
    out[2 * i + 1] = static_cast<unsigned char>(s);
  }
}

// `row` (n bytes, bpp bytes per pixel) filtered with PNG filter `type` (0 none .. 4 Paeth) against
// `prev` (the row above, unfiltered; zeros for the first) into out[0..n).
void filter_row(int type, const unsigned char* row, const unsigned char* prev, size_t n, size_t bpp, unsigned char* out) {
  switch (type) {
    case 0: std::memcpy(out, row, n); break;
    case 1:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>(row[i] - (i >= bpp ? row[i - bpp] : 0));
      break;
    case 2:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>(row[i] - prev[i]);
      break;
    case 3:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>(row[i] - (((i >= bpp ? row[i - bpp] : 0) + prev[i]) >> 1));
      break;
    default:
      for (size_t i = 0; i < n; ++i) {
        const int a = i >= bpp ? row[i - bpp] : 0, c = i >= bpp ? prev[i - bpp] : 0;
        out[i] = static_cast<unsigned char>(row[i] - detail::paeth_predictor(a, prev[i], c));
      }
  }
}

// libpng's adaptive choice: the filter whose output, as signed bytes, has the smallest sum of
// absolute values.
int adaptive_filter(const unsigned char* row, const unsigned char* prev, size_t n, size_t bpp, std::vector<unsigned char>& trial) {
  trial.resize(n);
  int best = 0;
  uint64_t best_sum = UINT64_MAX;
  for (int type = 0; type <= 4; ++type) {
    filter_row(type, row, prev, n, bpp, trial.data());
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i) sum += static_cast<uint64_t>(std::abs(static_cast<int>(static_cast<signed char>(trial[i]))));
    if (sum < best_sum) best_sum = sum, best = type;
  }
  return best;
}

void put_be32(std::vector<unsigned char>& out, size_t at, uint32_t v) {
  out[at] = static_cast<unsigned char>(v >> 24), out[at + 1] = static_cast<unsigned char>(v >> 16);
  out[at + 2] = static_cast<unsigned char>(v >> 8), out[at + 3] = static_cast<unsigned char>(v);
}

// A chunk of `type` around the bytes out[at + 8 ..) already appended: its length and CRC filled in.
void close_chunk(std::vector<unsigned char>& out, size_t at) {
  put_be32(out, at, static_cast<uint32_t>(out.size() - at - 8));
  const uint32_t crc = crc32_update(0, out.data() + at + 4, out.size() - at - 4);
  out.resize(out.size() + 4);
  put_be32(out, out.size() - 4, crc);
}

size_t open_chunk(std::vector<unsigned char>& out, const char* type) {
  const size_t at = out.size();
  out.resize(at + 8);
  std::memcpy(out.data() + at + 4, type, 4);
  return at;
}

// Buffers a thread keeps between images; very large ones are given back after the image.
struct Scratch {
  std::vector<unsigned char> filtered, rows, trial, deflated, file;
  void trim() {
    for (auto* v : {&filtered, &rows, &trial, &deflated, &file}) {
      if (v->capacity() > (size_t{64} << 20)) std::vector<unsigned char>().swap(*v);
    }
  }
};

// The whole PNG file of `image` in scratch.file.
void encode(ConstImageView image, int bit_depth, int compression, const PngValueMap* map, Scratch& scratch) {
  const size_t bpp = static_cast<size_t>(bit_depth / 8), n = static_cast<size_t>(image.width) * bpp;
  const auto height = static_cast<size_t>(image.height);
  // Filters (output.png_compression, docs/mri.md): none at level 0; at 1..5 UP (the row above) for
  // every row (on MRI slices as fast as SUB or none and the smallest of the three); at 6..9 libpng's
  // adaptive per-row choice.
  const int fixed = compression == 0 ? 0 : compression <= 5 ? 2 : -1;
  scratch.filtered.resize((n + 1) * height);
  scratch.rows.assign(2 * n, 0);  // the row above (zeros for the first) and this one
  for (size_t y = 0; y < height; ++y) {
    unsigned char* prev = scratch.rows.data() + (y % 2) * n;
    unsigned char* row = scratch.rows.data() + ((y + 1) % 2) * n;
    if (y == 0) std::memset(prev, 0, n);
    row_samples(image.data + y * static_cast<size_t>(image.width), image.width, bit_depth, map, row);
    const int type = fixed >= 0 ? fixed : adaptive_filter(row, prev, n, bpp, scratch.trial);
    unsigned char* out = scratch.filtered.data() + y * (n + 1);
    out[0] = static_cast<unsigned char>(type);
    filter_row(type, row, prev, n, bpp, out + 1);
  }
  scratch.deflated.clear();
  detail::zlib_deflate(scratch.filtered.data(), scratch.filtered.size(), compression, compression >= 1 && compression <= 5,
                       scratch.deflated);

  std::vector<unsigned char>& file = scratch.file;
  file.assign({137, 'P', 'N', 'G', 13, 10, 26, 10});
  size_t at = open_chunk(file, "IHDR");
  file.resize(file.size() + 13);
  put_be32(file, at + 8, static_cast<uint32_t>(image.width));
  put_be32(file, at + 12, static_cast<uint32_t>(image.height));
  file[at + 16] = static_cast<unsigned char>(bit_depth);
  file[at + 17] = file[at + 18] = file[at + 19] = file[at + 20] = 0;  // gray; deflate; filter method 0; not interlaced
  close_chunk(file, at);
  constexpr size_t kMaxIdat = size_t{1} << 30;  // a chunk's length must stay below 2^31
  for (size_t from = 0; from < scratch.deflated.size(); from += kMaxIdat) {
    const size_t size = std::min(kMaxIdat, scratch.deflated.size() - from);
    at = open_chunk(file, "IDAT");
    file.insert(file.end(), scratch.deflated.begin() + static_cast<std::ptrdiff_t>(from),
                scratch.deflated.begin() + static_cast<std::ptrdiff_t>(from + size));
    close_chunk(file, at);
  }
  close_chunk(file, open_chunk(file, "IEND"));
}

void write_file(const std::filesystem::path& temp, const std::vector<unsigned char>& bytes) {
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw OutputError(temp.string() + ": cannot open for writing: " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t put = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) {
      const std::string why = put < 0 ? std::strerror(errno) : "nothing written";
      ::close(fd);
      throw OutputError(temp.string() + ": cannot write PNG: " + why);
    }
    done += static_cast<size_t>(put);
  }
  if (::close(fd) != 0) throw OutputError(temp.string() + ": cannot write PNG: close failed: " + std::strerror(errno));
}
}  // namespace

void write_png_gray(const std::filesystem::path& path, ConstImageView image, int bit_depth, int compression,
                    const PngValueMap* map) {
  if (bit_depth != 8 && bit_depth != 16) throw OutputError(path.string() + ": PNG bit depth must be 8 or 16");
  if (compression < 0 || compression > 9) throw OutputError(path.string() + ": PNG compression level must be 0..9");
  if (image.width <= 0 || image.height <= 0 || image.width > 0x7fffffff || image.height > 0x7fffffff) {
    throw OutputError(path.string() + ": cannot write an empty or oversized image as PNG");
  }
  thread_local Scratch scratch;
  encode(image, bit_depth, compression, map, scratch);
  AtomicOutput output(path);
  write_file(output.temp_path(), scratch.file);
  output.commit();
  scratch.trim();
}

}  // namespace imflow
