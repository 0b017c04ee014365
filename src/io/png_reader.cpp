// PNG input through stb_image (Debian's libstb): 8/16-bit grayscale, colour -> luminance.
#include <spdlog/spdlog.h>
#include <stb/stb_image.h>

#include <cmath>
#include <memory>

#include "imflow/errors.hpp"
#include "imflow/io/png.hpp"

namespace imflow {

namespace {
std::string stb_reason() {
  const char* reason = stbi_failure_reason();
  return reason != nullptr ? reason : "unknown error";
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
}  // namespace

PngInfo scan_png(const std::filesystem::path& path) {
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

int64_t read_png(const std::filesystem::path& path, ImageBuffer& out, const ReadLimits& limits, int* bit_depth) {
  const PngInfo info = scan_png(path);
  if (info.width <= 0 || info.height <= 0 || info.width * info.height > limits.max_pixels) {
    throw InputError(path.string() + ": PNG of " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                     " pixels exceeds the limit of " + std::to_string(limits.max_pixels) + " pixels per image");
  }
  int width = 0, height = 0, channels = 0;
  bool coloured = false;
  const int64_t count = info.width * info.height;
  if (info.bit_depth == 16) {
    std::unique_ptr<stbi_us, void (*)(void*)> data(stbi_load_16(path.c_str(), &width, &height, &channels, 0),
                                                   stbi_image_free);
    if (!data) throw InputError(path.string() + ": cannot decode the PNG (" + stb_reason() + ")");
    if (int64_t{width} * height != count) throw InputError(path.string() + ": PNG changed while being read");
    out.resize(width, height);
    coloured = to_gray(data.get(), channels, count, out.data());
  } else {
    std::unique_ptr<stbi_uc, void (*)(void*)> data(stbi_load(path.c_str(), &width, &height, &channels, 0),
                                                   stbi_image_free);
    if (!data) throw InputError(path.string() + ": cannot decode the PNG (" + stb_reason() + ")");
    if (int64_t{width} * height != count) throw InputError(path.string() + ": PNG changed while being read");
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
