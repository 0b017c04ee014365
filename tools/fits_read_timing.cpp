// Time FITS reads on one thread, CFITSIO against the direct read (issues 8 and 10): every
// whole size x size tile of a plane with read_fits_region, and the whole plane with read_fits_plane.
// Build: cmake --build BUILD --target fits_read_timing; run: BUILD/tests/fits_read_timing FILE [SIZE] [REPEATS]
// The file should be in the page cache (the first pass over it is not timed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "imflow/io/fits.hpp"
#include "io/fits_read_paths.hpp"

using namespace imflow;
using detail::FitsReadPath;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

const char* name_of(FitsReadPath path) { return path == FitsReadPath::cfitsio ? "cfitsio" : "direct "; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE.fits [TILE_SIZE=4096] [REPEATS=3]\n", argv[0]);
    return 1;
  }
  const std::string file = argv[1];
  const int64_t size = argc > 2 ? std::atoll(argv[2]) : 4096;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  const FitsImageInfo info = scan_fits(file).front();
  const int64_t width = info.width(), height = info.height();
  std::vector<TileRect> tiles;
  for (int64_t y = 0; y + size <= height; y += size) {  // whole tiles only
    for (int64_t x = 0; x + size <= width; x += size) tiles.push_back({x, y, size, size});
  }
  if (tiles.empty()) {
    std::fprintf(stderr, "%s: smaller than one %lld-pixel tile\n", file.c_str(), static_cast<long long>(size));
    return 1;
  }
  std::printf("%s: HDU %d, %lld x %lld, BITPIX %d, %zu tiles of %lld; direct read applies: %s\n", file.c_str(), info.hdu,
              static_cast<long long>(width), static_cast<long long>(height), info.bitpix, tiles.size(),
              static_cast<long long>(size), detail::fits_direct_read_applies(file, info.hdu) ? "yes" : "no");
  const double stored_bytes_per_pixel = std::abs(info.bitpix) / 8.0;
  const double tile_pixels = static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(tiles.size());
  ImageBuffer image, reference;
  ReadLimits limits;
  limits.max_pixels = int64_t{1} << 40;
  // Warm the page cache, and check that both paths agree on a tile.
  detail::read_fits_region(file, info.hdu, 0, tiles.front(), image, limits, FitsReadPath::fastest);
  detail::read_fits_region(file, info.hdu, 0, tiles.front(), reference, limits, FitsReadPath::cfitsio);
  if (std::memcmp(image.data(), reference.data(), sizeof(float) * static_cast<size_t>(tiles.front().size())) != 0) {
    std::fprintf(stderr, "the direct and CFITSIO reads differ\n");
    return 2;
  }
  for (FitsReadPath path : {FitsReadPath::cfitsio, FitsReadPath::fastest}) {
    double best_tiles = 1e30, best_plane = 1e30;
    for (int r = 0; r < repeats; ++r) {
      auto start = std::chrono::steady_clock::now();
      for (const TileRect& tile : tiles) detail::read_fits_region(file, info.hdu, 0, tile, image, limits, path);
      best_tiles = std::min(best_tiles, seconds_since(start));
      start = std::chrono::steady_clock::now();
      detail::read_fits_plane(file, info.hdu, 0, image, limits, path);
      best_plane = std::min(best_plane, seconds_since(start));
    }
    const double pixels = static_cast<double>(width) * static_cast<double>(height);
    std::printf("%s  tiles: %7.1f ms per %lldx%lld tile, %5.2f GB/s stored | whole plane: %7.1f ms, %5.2f GB/s stored\n",
                name_of(path), 1e3 * best_tiles / static_cast<double>(tiles.size()), static_cast<long long>(size),
                static_cast<long long>(size), tile_pixels * stored_bytes_per_pixel / best_tiles / 1e9, 1e3 * best_plane,
                pixels * stored_bytes_per_pixel / best_plane / 1e9);
  }
  return 0;
}
