// The tiling of a run (docs/tiling.md): TileRun expands large FITS planes into tile items and
// runs the background pre-pass before an image's tiles are emitted; TiledImage is the state the
// tiles of one image share (global background, per-tile labels and sums, tile-by-tile outputs)
// until its last tile finishes and the merge writes one catalog.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "imflow/io/fits_tile_writer.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/kernels/tile_merge.hpp"
#include "imflow/tiling.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

struct RunContext;

struct TiledImage {
  ItemRef image;  // the plane as a whole-image reference (no tile fields)
  TileGrid grid;
  int64_t expected = 0;  // tiles that will reach the writer (1 when the pre-pass failed)

  // Set by the pre-pass, before any tile is emitted.
  std::optional<BackgroundStats> background;
  int prepass_passes = 0;
  double prepass_seconds = 0.0;

  // Filled by the tiles: tiles[t] by the one item of tile t; the rest under `mutex`.
  std::vector<kernels::TileLabels> tiles;
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::string error;  // the first failure
  std::optional<double> threshold;
  bool labelled = false;  // a label step ran (the merge numbers the sources)
  bool measured = false;  // a measure step ran (the merge makes the catalog)
  int64_t done = 0;
  int64_t input_bytes = 0;
  std::vector<StageTime> times;  // busy seconds per stage, summed over the tiles
  std::unique_ptr<FitsTileWriter> labels_out, bgsub_out, image_out;
  std::atomic<bool> finished{false};  // its record is written
  std::atomic<int64_t> out_of_range_pixels{0};  // float64 pixels beyond float32's, counted over the tiles' cores

  // Record a failure (the first message is kept).
  void fail(const std::string& message);

  // The measure step's gain for this image (steps/measure_gain.hpp), resolved once (with
  // gain_keyword, one header read) for all its tiles and its catalog's GAIN card.
  double measure_gain(const Step& measure);

 private:
  std::once_flag gain_once_;
  double gain_ = 0.0;
};

class TileRun {
 public:
  TileRun(RunContext& run, TilingPlan plan) : run_(run), plan_(std::move(plan)) {}

  const TilingPlan& plan() const { return plan_; }
  // Set by the CUDA engine before the graph runs: the largest plane (pixels) it processes as a
  // GPU-resident image (0: none; see TilingPlan::resident).
  void set_resident_pixels(int64_t pixels) { resident_pixels_ = plan_.resident ? pixels : 0; }
  // The tile items of a plane, or none when it is processed whole (small, not FITS, gzip-compressed),
  // or one whole-plane item read as strips into GPU memory (ItemRef::resident_rows).
  std::vector<ItemRef> tiles_of(const ItemRef& plane, const PlaneInfo& info);
  // Called when the first tile of an image is about to be emitted: the background pre-pass.
  // On failure, sets first_tile.error and makes that tile stand for the whole image.
  void prepare(ItemRef& first_tile);
  // After the graph: record every image whose tiles did not all finish (a stopped run).
  void record_unfinished();

 private:
  RunContext& run_;
  TilingPlan plan_;
  int64_t resident_pixels_ = 0;
  std::mutex mutex_;
  std::vector<std::shared_ptr<TiledImage>> images_;
};

// The background pre-pass: kappa-sigma over the whole image (after the steps before
// `background`), tile by tile in parallel, exact (StreamingKappaSigma). Sets image.background.
// Throws std::runtime_error naming the file.
void run_background_prepass(RunContext& run, TiledImage& image, const TilingPlan& plan);

// The sequence number of a tile's image (its first tile's item index), for traces.
int64_t tile_image_index(const ItemRef& tile);

// Write the tile's share of the label map / bgsub / image outputs; on the last tile, merge and
// write the image's catalog, summary record and manifest line (tile_finalize.cpp).
void finalize_tiled_image(RunContext& run, TiledImage& image);

// Host stages of a tile item (stages.cpp dispatches to them).
void tile_cpu_process_stage(RunContext& run, WorkItem& item);
void tile_finish_stage(RunContext& run, WorkItem& item);
// After the steps: keep the tile's labels (borders, first pixels) and, with `measure` (the
// pipeline's measure step, or null), its partial sums in image coordinates, for the merge. The
// CUDA graph calls it after download.
void record_tile_labels(RunContext& run, WorkItem& item, const Step* measure);
#ifdef IMFLOW_HAVE_CUDA
// The CUDA graph's tile hooks (tile_gpu.cpp): enqueue one step for a tile (the background from the
// pre-pass, the mask cut to the core before label, measure left to the host), and after download
// record the tile's labels and sums on the host.
void tile_run_cuda(const Step& step, WorkItem& item, GpuContext& gpu);
void tile_after_gpu(RunContext& run, WorkItem& item);
#endif

// Zero the mask outside the tile's core, so labels stay within the core (the halo is read for
// convolution only; each pixel is labelled by the one tile that owns it).
void clear_mask_outside_core(WorkItem& item);

}  // namespace imflow
