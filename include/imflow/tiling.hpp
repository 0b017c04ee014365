// Tiling of large images (docs/tiling.md): the `tiling` section of a pipeline, whether the
// pipeline's steps and outputs can run on tiles, the halo they need, and the tile grid.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "imflow/pipeline.hpp"
#include "imflow/tile_rect.hpp"

namespace imflow {

class ParamReader;

// `tiling: {size: N, halo: auto|N, resident: auto|off}`; a size given makes explicit_size.
TilingConfig parse_tiling(ParamReader& reader);

// What a run does with large images.
struct TilingPlan {
  int64_t size = 0;      // 0: no image is tiled
  int64_t halo = 0;      // pixels read around each tile's core
  int connectivity = 4;  // of the label step (how labels join across tile borders)
  bool has_background = false;  // a background step runs: its statistics come from the pre-pass
  double kappa = 3.0;    // its parameters
  int max_iters = 100;
  std::string off_reason;  // why tiling is off when the default asked for it (empty otherwise)
  // With off_reason: the tile size the default asked for; planes larger than it are processed
  // whole, each with a log line giving the reason.
  int64_t whole_above = 0;
  // On the CUDA engine, a large image whose working set fits in GPU memory is read strip by strip
  // straight into the GPU and processed there whole (docs/tiling.md, "GPU-resident images"): a
  // tiled one, and with off_reason one that would be processed whole. Allowed when the outputs are
  // catalogs only (csv, fits, ldac) and tiling.resident is auto.
  bool resident = false;
  std::string resident_off_reason;
  // GPU memory a resident image's steps need per pixel (deblending and the mesh maps add theirs).
  int64_t resident_bytes_per_pixel = 48;
};

// Rows per strip of a GPU-resident image: strips of about tile_size^2 pixels, at most 4 Mi (16 MiB
// of float32, a read that keeps every thread busy), whole rows.
inline int64_t resident_strip_rows(int64_t tile_size, int64_t width, int64_t height) {
  constexpr int64_t kMaxStripPixels = int64_t{1} << 22;
  const int64_t pixels = tile_size * tile_size < kMaxStripPixels ? tile_size * tile_size : kMaxStripPixels;
  const int64_t rows = width > 0 ? pixels / width : height;
  return rows < 1 ? 1 : (rows > height ? height : rows);
}

// How far (pixels) the pipeline's convolution steps reach: the sum over `convolve` steps of
// max(kernel width / 2, kernel height / 2). A tile read with at least this halo gives, over its
// core, exactly the whole image's convolved values.
int64_t convolution_reach(const Pipeline& pipeline);

// The halo `auto` gives: convolution_reach(), plus 1 when a measure step runs (its flag for a
// non-finite neighbour looks one pixel around the segment, convolved values included).
int64_t required_halo(const Pipeline& pipeline);

// The plan for `pipeline`. Throws ConfigError when tiling was asked for explicitly (`tiling:` in
// the file or --tile) but a step or output cannot run on tiles, or when an explicit halo is
// smaller than required_halo(). With the default settings such a pipeline is not tiled.
TilingPlan plan_tiling(const Pipeline& pipeline);

// Whether a width x height plane is tiled under `plan` (larger than the tile in either dimension).
inline bool tiles_image(const TilingPlan& plan, int64_t width, int64_t height) {
  return plan.size > 0 && (width > plan.size || height > plan.size);
}

// Whether a file's planes can be read by tiles: FITS, not compressed as a whole file (a .fits.gz
// is inflated whole on every open; a tile-compressed .fits.fz is read tile by tile).
bool file_reads_by_tiles(const std::filesystem::path& path);

// The tile grid of a width x height image: cores of size x size (smaller at the right and bottom
// edges), in raster order (row of tiles by row of tiles).
struct TileGrid {
  int64_t width = 0, height = 0, size = 0, halo = 0;
  int64_t columns() const { return (width + size - 1) / size; }
  int64_t rows() const { return (height + size - 1) / size; }
  int64_t count() const { return columns() * rows(); }
  TileRect core(int64_t index) const;
  TileRect halo_rect(int64_t index) const { return core(index).grown(halo, width, height); }
};

}  // namespace imflow
