// PNG slices through libpng: reading 8/16-bit grayscale (RGB/RGBA/palette -> luminance) and
// writing 8/16-bit grayscale (atomically).
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/io/fits.hpp"

namespace imflow {

struct PngInfo {
  int64_t width = 0;
  int64_t height = 0;
  int bit_depth = 8;  // 8 or 16 (1/2/4-bit gray samples are expanded to 8)
  int channels = 1;   // 1 gray, 2 gray+alpha, 3 RGB (and palette), 4 RGBA
};

// Signature and IHDR only (CRC, sizes, depth checked); throws InputError naming the file when it is
// not a readable PNG. The rest of the file is checked by read_png.
PngInfo scan_png(const std::filesystem::path& path);

// Decode into `out` as float32 sample values (0..255 or 0..65535). Colour images become
// luminance Y = 0.299 R + 0.587 G + 0.114 B (alpha ignored), with one warning per file when the
// channels actually differ. Checks width*height against limits.max_pixels before decoding.
// Returns the bytes of pixel data as stored (width * height * channels * bytes per sample).
int64_t read_png(const std::filesystem::path& path, ImageBuffer& out, const ReadLimits& limits = {},
                 int* bit_depth = nullptr);

// A map applied to each value before it becomes a sample: float(value * scale + offset), in double
// (a normalization the pixels have not had yet, applied without a copy of the image).
struct PngSampleMap {
  double scale = 1.0;
  double offset = 0.0;
};

// Write `image` (each value mapped by `map` when given) as a grayscale PNG of `bit_depth` (8 or
// 16). Values are rounded to the nearest integer and clamped to [0, 2^bit_depth - 1]; NaN becomes
// 0. Atomic; throws OutputError. `compression`: zlib level 0..9 (see output.png_compression in
// docs/mri.md).
void write_png_gray(const std::filesystem::path& path, ConstImageView image, int bit_depth, int compression = 1,
                    const PngSampleMap* map = nullptr);

}  // namespace imflow
