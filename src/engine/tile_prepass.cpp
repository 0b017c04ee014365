// The background pre-pass of a tiled image: its pixels are read in parts, the steps before
// `background` (convolve) run on each part, and each part's core feeds StreamingKappaSigma. A
// part is a tile with its halo when such steps exist, else a strip of a tile's core (a few MiB).
// Parts run in parallel, at most as many at once as half of engine.memory_mb holds (whatever the
// thread count; the first tiles of the main pass may already be in flight), each with a work item
// from a pool of that size, and each thread with one histogram. A part's work runs isolated: a
// step's own parallel loop (convolve) must not let its thread pick up another part mid-step.
#include <tbb/concurrent_queue.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

#include "imflow/errors.hpp"
#include "imflow/kernels/background_histogram.hpp"
#include "stages.hpp"
#include "tiled_image.hpp"

namespace imflow {

namespace {
constexpr int64_t kStripRows = 256;  // rows per strip of a tile's core: 4 MiB of a 4096-wide tile
}  // namespace

void run_background_prepass(RunContext& run, TiledImage& image, const TilingPlan& plan) {
  if (!plan.has_background) return;
  const auto& steps = run.pipeline.steps;
  size_t before = 0;  // steps before the background step run on each tile first (convolve)
  while (before < steps.size() && steps[before]->name() != "background") ++before;
  const InputFormat* format = input_format_for(image.image.path);
  if (format == nullptr) throw std::runtime_error(image.image.path.string() + ": unknown file format");
  ReadLimits limits;
  limits.max_pixels = run.pipeline.input.max_pixels;
  std::atomic<int64_t> counted_by_the_tiles{0};  // out-of-range pixels: the tiles count them once
  limits.out_of_range_pixels = &counted_by_the_tiles;
  // Every tile is read with its halo: one beyond input.max_pixels fails the image now, named as
  // the tile it is, before the pre-pass reads the file.
  for (int64_t t = 0; t < image.grid.count(); ++t) {
    const TileRect read = image.grid.halo_rect(t);
    if (read.size() > limits.max_pixels) {
      throw InputError(item_name(image.image) + ": a tile of " + std::to_string(read.width) + "x" +
                       std::to_string(read.height) + " pixels with its halo exceeds input.max_pixels (" +
                       std::to_string(limits.max_pixels) + "); a smaller tiling.size keeps tiles within it");
    }
  }

  const auto start = Trace::Clock::now();
  kernels::StreamingKappaSigma stats(plan.kappa, plan.max_iters);
  // The parts: whole tiles with their halo for the steps before `background`, else strips of the cores.
  struct Part {
    int64_t tile;
    TileRect core, read;
  };
  std::vector<Part> parts;
  int64_t part_bytes = 0;  // the largest part in memory: pixels (4 bytes), the detection image and scratch
  for (int64_t t = 0; t < image.grid.count(); ++t) {
    const TileRect core = image.grid.core(t);
    if (before > 0) {
      parts.push_back({t, core, image.grid.halo_rect(t)});
      part_bytes = std::max(part_bytes, parts.back().read.size() * 12);
      continue;
    }
    for (int64_t y = core.y; y < core.y_end(); y += kStripRows) {
      const TileRect strip{core.x, y, core.width, std::min(kStripRows, core.y_end() - y)};
      parts.push_back({t, strip, strip});
      part_bytes = std::max(part_bytes, strip.size() * 4);
    }
  }
  const int at_once = static_cast<int>(std::clamp<int64_t>((run.pipeline.engine.memory_mb << 19) / std::max<int64_t>(part_bytes, 1),
                                                           1, tbb::this_task_arena::max_concurrency()));
  std::vector<WorkItem> pool(static_cast<size_t>(at_once));
  tbb::concurrent_queue<WorkItem*> free_items;
  for (WorkItem& item : pool) free_items.push(&item);
  tbb::task_arena arena(at_once);
  double busy_seconds = 0.0;
  std::mutex busy_mutex;
  do {
    tbb::enumerable_thread_specific<kernels::StreamingKappaSigma::Pass> passes([&] { return stats.start_pass(); });
    const int pass = stats.passes();
    auto prepass_part = [&](const Part& part) {
      const int64_t t = part.tile;
      if (run.stopping()) throw std::runtime_error(item_name(image.image) + ": the run stopped during its background pre-pass");
      const auto tile_start = Trace::Clock::now();
      WorkItem* taken = nullptr;
      if (!free_items.try_pop(taken)) throw std::logic_error("background pre-pass: more parts in flight than work items");
      struct GiveBack {
        tbb::concurrent_queue<WorkItem*>& queue;
        WorkItem* item;
        ~GiveBack() { queue.push(item); }
      } give_back{free_items, taken};
      WorkItem& item = *taken;
      ItemRef ref = image.image;
      ref.tile = t;
      ref.tiles = image.grid.count();
      ref.core = part.core;
      ref.halo = part.read;
      item.reset(ref);
      format->read(item.ref, item.pixels, limits);
      for (size_t s = 0; s < before; ++s) {
        try {
          steps[s]->run_cpu(item);
        } catch (const std::exception& error) {
          throw std::runtime_error(item_name(image.image) + ": background pre-pass, tile " + std::to_string(t) + ": step " +
                                   steps[s]->name() + ": " + error.what());
        }
      }
      const ImageBuffer& detection = item.detection_image();
      const TileRect& core = item.ref.core;
      const TileRect& halo = item.ref.halo;
      passes.local().add(detection.data() + (core.y - halo.y) * halo.width + (core.x - halo.x), core.width, core.height,
                         halo.width);
      const auto tile_end = Trace::Clock::now();
      const double seconds = std::chrono::duration<double>(tile_end - tile_start).count();
      {
        std::lock_guard lock(busy_mutex);
        busy_seconds += seconds;
      }
      if (run.trace != nullptr) {
        run.trace->add(worker_track("prepass"), "background prepass", run.trace->to_us(tile_start), seconds * 1e6,
                       "{\"image\":" + std::to_string(image.image.index) + ",\"tile\":" + std::to_string(t) +
                           ",\"pass\":" + std::to_string(pass) + "}");
      }
    };
    arena.execute([&] {
      tbb::parallel_for(size_t{0}, parts.size(),
                        [&](size_t p) { tbb::this_task_arena::isolate([&] { prepass_part(parts[p]); }); });
    });
    for (const auto& accumulated : passes) stats.merge(accumulated);
  } while (!stats.finish_pass());
  image.background = stats.result();
  image.prepass_passes = stats.passes();
  image.prepass_seconds = std::chrono::duration<double>(Trace::Clock::now() - start).count();
  image.times.push_back({"background prepass", busy_seconds});
}

}  // namespace imflow
