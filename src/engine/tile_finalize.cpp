// The last tile of an image: merge the tiles' labels and sums into one catalog, renumber the
// tile-by-tile label map, commit the image outputs, and record the image once (summary,
// manifest, progress), as a whole image's item would be.
#include <spdlog/spdlog.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "imflow/errors.hpp"
#include "imflow/io/catalog.hpp"
#include "imflow/io/fits.hpp"
#include "manifest.hpp"
#include "steps/measure_saturation.hpp"
#include "stages.hpp"
#include "item_warnings.hpp"
#include "tiled_image.hpp"
#include "writer.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
bool has_step(const Pipeline& pipeline, const char* name) {
  return std::any_of(pipeline.steps.begin(), pipeline.steps.end(), [&](const auto& step) { return step->name() == name; });
}

// Rewrite the label map tile by tile: each tile's own labels -> the image's source ids. The file
// is read and written by one thread at a time (measured: reading in bands through a pipeline
// gained nothing, the I/O dominates); the mapping runs on all threads.
void renumber_labels(TiledImage& image, const kernels::MergedSources& merged) {
  std::vector<int32_t> labels;
  for (int64_t t = 0; t < image.grid.count(); ++t) {
    const TileRect core = image.grid.core(t);
    const std::vector<int32_t>& ids = merged.final_id[static_cast<size_t>(t)];
    if (ids.empty()) continue;  // no source in this tile: zeros stay zeros
    labels.resize(static_cast<size_t>(core.size()));
    image.labels_out->read(core, labels.data());
    const tbb::blocked_range<size_t> pixels(0, labels.size(), size_t{1} << 18);
    tbb::this_task_arena::isolate([&] {  // the file's one reader-writer takes no catalog task meanwhile
      tbb::parallel_for(pixels, [&](const tbb::blocked_range<size_t>& range) {
        for (size_t i = range.begin(); i < range.end(); ++i) {
          if (labels[i] > 0) labels[i] = ids[static_cast<size_t>(labels[i] - 1)];
        }
      });
    });
    image.labels_out->write(core, labels.data(), core.width);
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Write the image's outputs; returns the files written. Throws on failure, having removed those it
// had finished (all outputs or none). After the merge (its sources on all threads), the label map
// is renumbered while the CSV and FITS catalogs are written, the three at once, each spreading its
// own work over the threads.
std::vector<fs::path> write_image_outputs(RunContext& run, TiledImage& image, WorkItem& record_item) {
  const OutputConfig& output = run.pipeline.output;
  std::vector<fs::path> written;
  const fs::path stem = output_stem(image.image, output.dir);
  check_output_parents(stem, output.dir);
  auto start = std::chrono::steady_clock::now();
  double merge_seconds = 0.0, catalog_seconds = 0.0, labels_seconds = 0.0;
  std::optional<kernels::MergedSources> merged;
  if (image.labelled) {
    const TileGrid& grid = image.grid;
    const int connectivity = run.tiles->plan().connectivity;
    if (has_step(run.pipeline, "measure")) {
      merged = kernels::merge_tile_catalog(image.tiles, grid.columns(), grid.rows(), connectivity, grid.width,
                                           grid.height);
      record_item.catalog = std::move(merged->catalog);
      record_item.catalog_csv.reset();  // a tile's rows, not the image's
      for (const auto& step : run.pipeline.steps) {  // the saturated flag from the merged peaks
        if (step->name() == "measure") {
          flag_saturated(*record_item.catalog, SaturationSetting::from_resolved(step->params()).for_item(image.image));
        }
      }
    } else {
      merged = kernels::merge_tile_labels(image.tiles, grid.columns(), grid.rows(), connectivity);
    }
    std::vector<kernels::TileLabels>().swap(image.tiles);  // the parts are merged: free them
    record_item.nlabels = merged->count;
    merge_seconds = seconds_since(start);
  }
  tbb::task_group group;
  auto timed = [](double& seconds, auto&& work) {
    const auto begin = std::chrono::steady_clock::now();
    work();
    seconds = seconds_since(begin);
  };
  try {
    // The label map is renumbered while the catalogs are written.
    if (merged && image.labels_out) group.run([&] { timed(labels_seconds, [&] { renumber_labels(image, *merged); }); });
    if (record_item.catalog && output.wants_catalog_files()) {
      timed(catalog_seconds,
            [&] {
              const ImageWcs wcs = output_wcs(record_item.ref, true, output);
              write_item_catalog(stem, record_item, *record_item.catalog, wcs, output, written);
            });
    }
    group.wait();
    if (image.labels_out) {
      image.labels_out->commit();
      written.push_back(image.labels_out->final_path());
    }
    for (auto* out : {image.bgsub_out.get(), image.image_out.get()}) {
      if (out == nullptr) continue;
      out->commit();
      written.push_back(out->final_path());
    }
  } catch (...) {
    group.cancel();
    group.wait();
    remove_outputs(written);  // all outputs or none, as for an untiled item
    throw;
  }
  spdlog::debug("{}: merge {:.3f} s: labels and catalog {:.3f}, then at once catalog files {:.3f}, label map {:.3f}",
                item_name(image.image), seconds_since(start), merge_seconds, catalog_seconds, labels_seconds);
  return written;
}
}  // namespace

void finalize_tiled_image(RunContext& run, TiledImage& image) {
  // The image as one item: its reference, results and summed stage times.
  WorkItem record_item;
  record_item.ref = image.image;
  record_item.background = image.background;
  record_item.threshold = image.threshold;
  add_result_warnings(record_item);  // what an untiled item's would say (a noise of 0)
  if (const int64_t beyond = image.out_of_range_pixels.load(); beyond > 0) {
    warn_beyond_float32(image.image.path, image.image.hdu, image.image.plane, beyond);
  }
  std::vector<fs::path> outputs;
  std::string error;
  {
    std::lock_guard lock(image.mutex);
    error = image.error;
  }
  if (error.empty()) {
    const auto start = std::chrono::steady_clock::now();
    try {
      for (const auto& step : run.pipeline.steps) {  // the gain the tiles' error columns used (GAIN card)
        if (step->name() == "measure") record_item.gain = image.measure_gain(*step);
      }
      // Isolated: while it waits for its parallel parts, this thread takes no other task of the graph.
      tbb::this_task_arena::isolate([&] { outputs = write_image_outputs(run, image, record_item); });
    } catch (const std::bad_alloc&) {
      error = item_name(image.image) + ": out of memory while merging its tiles";
    } catch (const std::exception& failure) {
      error = item_name(image.image) + ": cannot write outputs: " + failure.what();
      if (const std::string problem = output_device_problem(run.pipeline.output.dir); !problem.empty()) {
        run.halt_with(problem + "; finished items are kept and listed in the manifest");
      }
      outputs.clear();
    }
    image.times.push_back({"merge", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
  }
  // Uncommitted outputs (failure, stopped run) are removed with their writers.
  image.labels_out.reset();
  image.bgsub_out.reset();
  image.image_out.reset();
  std::vector<kernels::TileLabels>().swap(image.tiles);

  record_item.times = image.times;
  record_item.input_bytes = image.input_bytes;
  if (error.empty()) {
    record_item.status = ItemStatus::ok;
  } else {
    record_item.fail(error);
  }
  nlohmann::json record = RunSummary::item_record(record_item, outputs);
  record["width"] = image.grid.width;
  record["height"] = image.grid.height;
  record["tiles"] = {{"count", image.grid.count()},
                     {"size", image.grid.size},
                     {"halo", image.grid.halo},
                     {"background_passes", image.prepass_passes},
                     {"background_prepass_seconds", image.prepass_seconds}};
  if (run.manifest != nullptr) {
    try {
      run.manifest->append(image.image, outputs, record);
    } catch (const std::exception& failure) {
      if (record_item.status != ItemStatus::failed) {
        record_item.fail(item_name(image.image) + ": cannot record in the manifest: " + failure.what());
        record["status"] = "failed";
        record["error"] = record_item.error;
      }
    }
  }
  const bool ok = record_item.status == ItemStatus::ok;
  if (!ok) {
    spdlog::error("{}", record_item.error);
    if (run.pipeline.engine.fail_fast) run.halt = true;
  }
  try {
    run.summary.add_record(std::move(record), ok, image.input_bytes, image.grid.width * image.grid.height, image.times);
  } catch (const std::bad_alloc&) {
    spdlog::error("{}: out of memory while recording the result", item_name(image.image));
  }
  if (run.progress != nullptr) run.progress->item_done(image.image.last_of_file, image.input_bytes, !ok);
  image.finished = true;
}

}  // namespace imflow
