// libFuzzer target: scan_png + read_png (libpng) on arbitrary bytes named x.png.
#include "fuzz_common.hpp"
#include "imflow/io/png.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = imflow::fuzz::input_file(".png", data, size);
  imflow::ReadLimits limits;
  limits.max_pixels = int64_t{1} << 22;
  try {
    imflow::scan_png(path);
    imflow::ImageBuffer pixels;
    imflow::read_png(path, pixels, limits);
  } catch (const std::exception&) {
  }
  return 0;
}
