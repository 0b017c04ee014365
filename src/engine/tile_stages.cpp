// Host stages of a tile item: the steps on the tile (the background comes from the pre-pass, the
// mask is cut to the core before labelling, measuring keeps partial sums), and the writer's part
// (the tile's share of the image outputs; the last tile finalizes the image).
#include <algorithm>

#include "imflow/kernels/measure.hpp"
#include "stages.hpp"
#include "tiled_image.hpp"
#include "writer.hpp"

namespace imflow {

void clear_mask_outside_core(WorkItem& item) {
  const TileRect& core = item.ref.core;
  const TileRect& halo = item.ref.halo;
  if (core == halo || item.mask.empty()) return;
  uint8_t* mask = item.mask.data();
  for (int64_t y = 0; y < halo.height; ++y) {
    uint8_t* row = mask + y * halo.width;
    const int64_t image_y = halo.y + y;
    if (image_y < core.y || image_y >= core.y_end()) {
      std::fill(row, row + halo.width, uint8_t{0});
      continue;
    }
    std::fill(row, row + (core.x - halo.x), uint8_t{0});
    std::fill(row + (core.x_end() - halo.x), row + halo.width, uint8_t{0});
  }
}

void record_tile_labels(RunContext&, WorkItem& item, const Step* measure) {
  TiledImage& image = *item.ref.tiled;
  kernels::TileLabels& tile = image.tiles[static_cast<size_t>(item.ref.tile)];
  const int32_t count = item.nlabels.value();
  kernels::describe_tile_labels(item.labels.data(), item.ref.halo, item.ref.core, count, image.grid.width, tile);
  if (measure) {
    // As the measure step does with the global background: flux_iso and moments on value - median,
    // errors from its std (and the step's gain); after a detection filter that subtracted the
    // background, the moments on the filtered values. The masked-neighbour flag looks one pixel
    // around each pixel: the halo has that pixel.
    kernels::MeasureBackground background;
    if (item.background) {
      background.level = item.background->median;
      background.rms = item.background->std;
    }
    background.gain = image.measure_gain(*measure);
    item.gain = background.gain;  // the GAIN card of the tile's share of the image outputs
    tile.sums = kernels::accumulate_sources(item.pixels.view(), item.labels.data(), count, item.ref.halo.x,
                                            item.ref.halo.y, background);
    if (item.detection_subtracted) {  // positions and shapes from the filtered image, already less the background
      tile.shape_sums = kernels::accumulate_sources(item.detection.view(), item.labels.data(), count, item.ref.halo.x,
                                                    item.ref.halo.y, background.noise_only());
    }
  }
}

void tile_cpu_process_stage(RunContext& run, WorkItem& item) {
  if (item.status == ItemStatus::failed) return;
  TiledImage& image = *item.ref.tiled;
  if (image.failed) {
    item.fail(item_name(item.ref) + ": tile " + std::to_string(item.ref.tile) + " skipped: another tile of the image failed");
    return;
  }
  bool recorded = false;
  for (const auto& step : run.pipeline.steps) {
    StageTimer timer(run, item, step->name(), worker_track("cpu"));
    try {
      const std::string& name = step->name();
      if (name == "background") {
        item.background = image.background.value();  // the whole image's, from the pre-pass
      } else if (name == "measure") {
        record_tile_labels(run, item, step.get());
        recorded = true;
      } else {
        if (name == "label") clear_mask_outside_core(item);
        step->run_cpu(item);
      }
    } catch (const std::exception& error) {
      item.fail(item_name(item.ref) + ": tile " + std::to_string(item.ref.tile) + ": " + step_failure(step->name(), error, item.ref.path));
      return;
    }
  }
  if (!recorded && item.nlabels) {
    StageTimer timer(run, item, "tile labels", worker_track("cpu"));
    record_tile_labels(run, item, nullptr);
  }
}

namespace {
// The tile's core inside its halo'd buffer.
template <typename T>
const T* core_start(const T* data, const ItemRef& ref) {
  return data + (ref.core.y - ref.halo.y) * ref.halo.width + (ref.core.x - ref.halo.x);
}

void write_tile_outputs(RunContext& run, TiledImage& image, WorkItem& item) {
  const OutputConfig& output = run.pipeline.output;
  const bool labels = output.wants("labels") && item.nlabels.has_value();
  const bool bgsub = output.wants("bgsub") && item.background.has_value();
  const bool pixels = output.wants("fits_image");
  if (!labels && !bgsub && !pixels) return;
  {
    std::lock_guard lock(image.mutex);
    if (!image.labels_out && !image.bgsub_out && !image.image_out) {
      const std::filesystem::path stem = output_stem(image.image, output.dir);
      check_output_parents(stem, output.dir);
      const std::vector<FitsCard> cards = image_cards(item, output_wcs(image.image, false, output));
      const int64_t width = image.grid.width, height = image.grid.height;
      auto make = [&](const char* suffix, FitsTileWriter::Pixels kind) {
        return std::make_unique<FitsTileWriter>(std::filesystem::path(stem.string() + suffix), width, height, kind, cards);
      };
      if (labels) image.labels_out = make(".labels.fits", FitsTileWriter::Pixels::int32);
      if (bgsub) image.bgsub_out = make(".bgsub.fits", FitsTileWriter::Pixels::float32);
      if (pixels) image.image_out = make(".image.fits", FitsTileWriter::Pixels::float32);
    }
  }
  const int64_t stride = item.ref.halo.width;
  // Label maps hold the tile's own labels until the merge renumbers them (finalize_tiled_image).
  if (image.labels_out) image.labels_out->write(item.ref.core, core_start(item.labels.data(), item.ref), stride);
  if (image.image_out) image.image_out->write(item.ref.core, core_start(item.pixels.data(), item.ref), stride);
  if (image.bgsub_out) {
    const TileRect& core = item.ref.core;
    const float median = static_cast<float>(item.background->median);
    item.scratch.resize(static_cast<size_t>(core.size()));
    const float* source = core_start(item.pixels.data(), item.ref);
    for (int64_t y = 0; y < core.height; ++y) {
      for (int64_t x = 0; x < core.width; ++x) item.scratch[static_cast<size_t>(y * core.width + x)] = source[y * stride + x] - median;
    }
    image.bgsub_out->write(core, item.scratch.data(), core.width);
  }
}
}  // namespace

void tile_finish_stage(RunContext& run, WorkItem& item) {
  TiledImage& image = *item.ref.tiled;
  if (item.status != ItemStatus::failed && !image.failed) {
    StageTimer timer(run, item, "write", worker_track("write"));
    try {
      write_tile_outputs(run, image, item);
    } catch (const std::exception& error) {
      item.fail(item_name(item.ref) + ": tile " + std::to_string(item.ref.tile) + ": cannot write outputs: " + error.what());
      if (const std::string problem = output_device_problem(run.pipeline.output.dir); !problem.empty()) {
        run.halt_with(problem + "; finished items are kept and listed in the manifest");
      }
    }
  }
  bool last = false;
  {
    std::lock_guard lock(image.mutex);
    if (item.status == ItemStatus::failed) {
      if (image.error.empty()) image.error = item.error;
      image.failed = true;
    }
    if (!image.threshold && item.threshold) image.threshold = item.threshold;
    if (item.nlabels) image.labelled = true;
    // Bytes of the core as stored (the halo is read twice, counted once).
    if (item.ref.halo.size() > 0) image.input_bytes += item.input_bytes * item.ref.core.size() / item.ref.halo.size();
    for (const StageTime& time : item.times) {
      auto found = std::find_if(image.times.begin(), image.times.end(), [&](const StageTime& t) { return t.stage == time.stage; });
      if (found == image.times.end()) image.times.push_back(time);
      else found->seconds += time.seconds;
    }
    last = ++image.done == image.expected;
  }
  if (last) finalize_tiled_image(run, image);
}

}  // namespace imflow
