// libFuzzer target: scan_fits + read_fits_plane (CFITSIO) on arbitrary bytes named x.fits.
#include "fuzz_common.hpp"
#include "imflow/io/fits.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = imflow::fuzz::input_file(".fits", data, size);
  imflow::ReadLimits limits;
  limits.max_pixels = int64_t{1} << 22;  // keep each run small; the limit itself is exercised
  try {
    int read = 0;
    for (const imflow::FitsImageInfo& image : imflow::scan_fits(path)) {
      for (int64_t plane = 0; plane < image.planes() && read < 4; ++plane, ++read) {
        imflow::ImageBuffer pixels;
        imflow::read_fits_plane(path, image.hdu, plane, pixels, limits);
      }
    }
  } catch (const std::exception&) {
  }
  return 0;
}
