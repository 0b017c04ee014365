// PNG input through stb_image (Debian's libstb): 8/16-bit grayscale, colour -> luminance.
// Each file is opened once per scan and once per read: its bytes (a header prefix for the scan,
// the whole file for the read) are read into memory and stb decodes from there (stb's own file
// calls opened the file once for the size, once for the depth and once for the pixels).
#include <spdlog/spdlog.h>
#include <stb/stb_image.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "imflow/errors.hpp"
#include "imflow/io/png.hpp"
#include "read_only_file.hpp"

namespace imflow {

namespace {
std::string stb_reason() {
  const char* reason = stbi_failure_reason();
  // stb's "XXXX PNG chunk not known" starts with the chunk type's bytes: at the end of a file with no
  // IEND (type 0) it is the empty string, which gave "cannot decode the PNG ()".
  if (reason == nullptr || *reason == '\0') return "corrupt or truncated PNG: unknown chunk or no IEND chunk";
  return reason;
}

uint32_t be32(const unsigned char* p) { return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]; }

// stb_image keeps the palette in an uninitialised stack array (stbi_uc palette[1024]) and expands an
// index past the PLTE's entries from it: garbage pixels that differ from run to run (valgrind: "Uninitialised
// value was created by a stack allocation" in libstb). For a palette PNG (colour type 3) in memory whose PLTE
// has fewer than 256 entries, pad the PLTE with a colour it does not use; a decoded pixel of that colour
// is an out-of-range index. Returns the padded file (CRC not updated: stb does not check CRCs) and the colour.
struct PaddedPalette {
  std::vector<unsigned char> file;
  std::array<unsigned char, 3> fill;
  uint32_t entries;  // in the file's PLTE
};
std::optional<PaddedPalette> pad_palette(const std::vector<unsigned char>& bytes) {
  if (bytes.size() < 33 || bytes[25] != 3) return std::nullopt;  // IHDR colour type
  for (size_t at = 8; at + 12 <= bytes.size();) {
    const uint32_t length = be32(&bytes[at]);
    if (length > bytes.size() - at - 12) return std::nullopt;
    if (std::memcmp(&bytes[at + 4], "IDAT", 4) == 0) return std::nullopt;
    if (std::memcmp(&bytes[at + 4], "PLTE", 4) == 0) {
      if (length % 3 != 0 || length >= 768) return std::nullopt;
      std::array<unsigned char, 3> fill{0, 0, 0};
      for (int candidate = 0; candidate < 256 * 256; ++candidate) {  // <= 255 entries: one of these is unused
        fill = {static_cast<unsigned char>(candidate >> 8), static_cast<unsigned char>(candidate & 255), 77};
        bool used = false;
        for (uint32_t e = 0; e < length && !used; e += 3) used = std::memcmp(&bytes[at + 8 + e], fill.data(), 3) == 0;
        if (!used) break;
      }
      std::vector<unsigned char> padded(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(at + 8 + length));
      for (uint32_t e = length; e < 768; e += 3) padded.insert(padded.end(), fill.begin(), fill.end());
      padded.insert(padded.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at + 8 + length), bytes.end());
      padded[at] = 0, padded[at + 1] = 0, padded[at + 2] = 768 >> 8, padded[at + 3] = 768 & 255;
      return PaddedPalette{std::move(padded), fill, length / 3};
    }
    at += 12 + length;
  }
  return std::nullopt;
}

// Samples of one decoded image (uint8 or uint16) -> float gray, luminance for colour images.
// Returns true when a colour image had pixels whose channels differ.
template <typename T>
bool to_gray(const T* samples, int channels, int64_t count, float* out) {
  if (channels <= 2) {  // gray or gray+alpha: take the gray channel
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(samples[i * channels]);
    return false;
  }
  bool coloured = false;
  for (int64_t i = 0; i < count; ++i) {
    const T* p = samples + i * channels;
    coloured = coloured || p[0] != p[1] || p[1] != p[2];
    // ITU-R BT.601 luma in double: exact for gray pixels (the weights sum to 1).
    out[i] = static_cast<float>(0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]);
  }
  return coloured;
}

// Up to `limit` bytes from the start of the file at `path`; `whole` tells whether that is all of it.
// Throws InputError naming the file when it cannot be opened or read.
std::vector<unsigned char> read_prefix(const std::filesystem::path& path, int64_t limit, bool& whole) {
  const detail::ReadOnlyFile file(path);
  const int64_t wanted = std::min(limit, file.size());
  std::vector<unsigned char> bytes(static_cast<size_t>(wanted));
  detail::pread_exactly(file, bytes.data(), wanted, 0, path, "PNG");
  whole = wanted == file.size();
  return bytes;
}

// Header fields from bytes in memory; nullopt when stb cannot tell from these bytes.
std::optional<PngInfo> info_from_memory(const std::vector<unsigned char>& bytes) {
  int width = 0, height = 0, channels = 0;
  const auto* data = bytes.data();
  const int size = static_cast<int>(bytes.size());
  if (stbi_info_from_memory(data, size, &width, &height, &channels) == 0) return std::nullopt;
  PngInfo info;
  info.width = width;
  info.height = height;
  info.channels = channels;
  info.bit_depth = stbi_is_16_bit_from_memory(data, size) ? 16 : 8;
  return info;
}

PngInfo info_from_file(const std::filesystem::path& path) {
  PngInfo info;
  int width = 0, height = 0, channels = 0;
  if (stbi_info(path.c_str(), &width, &height, &channels) == 0) {
    throw InputError(path.string() + ": not a readable PNG image (" + stb_reason() + ")");
  }
  info.width = width;
  info.height = height;
  info.channels = channels;
  info.bit_depth = stbi_is_16_bit(path.c_str()) ? 16 : 8;
  return info;
}

// The header is within the first bytes of a PNG; a file whose header stb cannot read from them
// (not a PNG, or one stb reads in another format) is scanned again from the file.
constexpr int64_t kScanBytes = int64_t{64} << 10;
// Files up to this size are decoded from memory (one read); larger ones from the file by stb.
constexpr int64_t kMemoryDecodeBytes = int64_t{256} << 20;
}  // namespace

PngInfo scan_png(const std::filesystem::path& path) {
  bool whole = false;
  const std::vector<unsigned char> prefix = read_prefix(path, kScanBytes, whole);
  if (std::optional<PngInfo> info = info_from_memory(prefix)) return *info;
  if (whole) throw InputError(path.string() + ": not a readable PNG image (" + stb_reason() + ")");
  return info_from_file(path);
}

namespace {
// Decoded samples (8-bit for stbi_uc, 16-bit for stbi_us), from `bytes` when they hold the whole
// file, else from the file; null on failure (stb_reason() says why).
template <typename Sample>
std::unique_ptr<Sample, void (*)(void*)> decode(const std::filesystem::path& path, const std::vector<unsigned char>* bytes,
                                                int& width, int& height, int& channels) {
  void* data = nullptr;
  if constexpr (sizeof(Sample) == 2) {
    data = bytes != nullptr ? stbi_load_16_from_memory(bytes->data(), static_cast<int>(bytes->size()), &width, &height,
                                                       &channels, 0)
                            : stbi_load_16(path.c_str(), &width, &height, &channels, 0);
  } else {
    data = bytes != nullptr
               ? stbi_load_from_memory(bytes->data(), static_cast<int>(bytes->size()), &width, &height, &channels, 0)
               : stbi_load(path.c_str(), &width, &height, &channels, 0);
  }
  return {static_cast<Sample*>(data), stbi_image_free};
}
}  // namespace

int64_t read_png(const std::filesystem::path& path, ImageBuffer& out, const ReadLimits& limits, int* bit_depth) {
  bool whole = false;
  std::vector<unsigned char> bytes = read_prefix(path, kMemoryDecodeBytes, whole);
  std::optional<PngInfo> from_memory = info_from_memory(bytes);
  if (!whole) bytes = {};  // too large to hold: stb decodes from the file
  if (!from_memory && whole) throw InputError(path.string() + ": not a readable PNG image (" + stb_reason() + ")");
  const PngInfo info = from_memory ? *from_memory : info_from_file(path);
  const std::vector<unsigned char>* memory = whole ? &bytes : nullptr;
  if (info.width <= 0 || info.height <= 0 || info.width * info.height > limits.max_pixels) {
    throw InputError(path.string() + ": PNG of " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                     " pixels exceeds the limit of " + std::to_string(limits.max_pixels) + " pixels per image");
  }
  int width = 0, height = 0, channels = 0;
  bool coloured = false;
  const int64_t count = info.width * info.height;
  if (info.bit_depth == 16) {
    const auto data = decode<stbi_us>(path, memory, width, height, channels);
    if (!data) throw InputError(path.string() + ": cannot decode the PNG (" + stb_reason() + ")");
    if (int64_t{width} * height != count) throw InputError(path.string() + ": PNG changed while being read");
    out.resize(width, height);
    coloured = to_gray(data.get(), channels, count, out.data());
  } else {
    const auto padded = memory != nullptr ? pad_palette(*memory) : std::nullopt;
    const auto data = decode<stbi_uc>(path, padded ? &padded->file : memory, width, height, channels);
    if (!data) throw InputError(path.string() + ": cannot decode the PNG (" + stb_reason() + ")");
    if (int64_t{width} * height != count) throw InputError(path.string() + ": PNG changed while being read");
    if (padded && channels >= 3) {
      const auto& fill = padded->fill;
      for (int64_t i = 0; i < count; ++i) {
        const stbi_uc* p = data.get() + i * channels;
        if (p[0] == fill[0] && p[1] == fill[1] && p[2] == fill[2]) {
          throw InputError(path.string() + ": corrupt PNG: palette index beyond the " +
                           std::to_string(padded->entries) +
                           " PLTE entries (pixel " + std::to_string(i % width) + "," + std::to_string(i / width) + ")");
        }
      }
    }
    out.resize(width, height);
    coloured = to_gray(data.get(), channels, count, out.data());
  }
  if (coloured) {
    spdlog::warn("{}: colour PNG ({} channels) converted to luminance 0.299 R + 0.587 G + 0.114 B", path.string(),
                 channels);
  }
  if (bit_depth != nullptr) *bit_depth = info.bit_depth;
  return count * channels * (info.bit_depth / 8);
}

}  // namespace imflow
