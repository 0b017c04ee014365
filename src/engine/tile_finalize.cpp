// The last tile of an image: merge the tiles' labels and sums into one catalog, renumber the
// tile-by-tile label map, commit the image outputs, and record the image once (summary,
// manifest, progress), as a whole image's item would be.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include "imflow/errors.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/catalog.hpp"
#include "imflow/kernels/measure.hpp"
#include "manifest.hpp"
#include "stages.hpp"
#include "tiled_image.hpp"
#include "writer.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
bool has_step(const Pipeline& pipeline, const char* name) {
  return std::any_of(pipeline.steps.begin(), pipeline.steps.end(), [&](const auto& step) { return step->name() == name; });
}

// Rewrite the label map tile by tile: each tile's own labels -> the image's source ids.
void renumber_labels(TiledImage& image, const kernels::MergedSources& merged) {
  std::vector<int32_t> labels;
  for (int64_t t = 0; t < image.grid.count(); ++t) {
    const TileRect core = image.grid.core(t);
    const std::vector<int32_t>& ids = merged.final_id[static_cast<size_t>(t)];
    if (ids.empty()) continue;  // no source in this tile: zeros stay zeros
    labels.resize(static_cast<size_t>(core.size()));
    image.labels_out->read(core, labels.data());
    for (int32_t& label : labels) {
      if (label > 0) label = ids[static_cast<size_t>(label - 1)];
    }
    image.labels_out->write(core, labels.data(), core.width);
  }
}

// The CSV of a catalog that can be large (a mosaic's), formatted 65536 rows at a time rather than
// as one string: the same bytes as write_catalog_csv.
void write_catalog_csv_in_parts(const fs::path& path, const Catalog& catalog) {
  AtomicOutput output(path);
  {
    std::ofstream stream(output.temp_path(), std::ios::binary);
    constexpr size_t kRows = 65536;
    for (size_t first = 0; first == 0 || first < catalog.size(); first += kRows) {
      const Catalog part(catalog.begin() + static_cast<std::ptrdiff_t>(first),
                         catalog.begin() + static_cast<std::ptrdiff_t>(std::min(catalog.size(), first + kRows)));
      const std::string text = catalog_csv(part);
      const size_t body = first == 0 ? 0 : text.find('\n') + 1;  // the header once
      stream.write(text.data() + body, static_cast<std::streamsize>(text.size() - body));
    }
    stream.flush();
    if (!stream) throw OutputError(path.string() + ": write failed: " + std::strerror(errno));
  }
  output.commit();
}

// Write the image's outputs; returns the files written. Throws on failure.
std::vector<fs::path> write_image_outputs(RunContext& run, TiledImage& image, WorkItem& record_item) {
  const OutputConfig& output = run.pipeline.output;
  std::vector<fs::path> written;
  const fs::path stem = output_stem(image.image, output.dir);
  check_output_parents(stem, output.dir);
  std::optional<kernels::MergedSources> merged;
  if (image.labelled) {
    merged = kernels::merge_tile_labels(image.tiles, image.grid.columns(), image.grid.rows(), run.tiles->plan().connectivity);
    std::vector<kernels::TileLabels>().swap(image.tiles);  // the parts are merged: free them before the catalog
    record_item.nlabels = merged->count;
    if (has_step(run.pipeline, "measure")) {
      record_item.catalog = kernels::finish_sources(merged->sums, image.grid.width, image.grid.height);
    }
    std::vector<kernels::SourceSums>().swap(merged->sums);
  }
  const std::vector<FitsCard> cards = provenance_cards(record_item);
  if (record_item.catalog && output.wants("csv")) {
    written.emplace_back(stem.string() + ".cat.csv");
    write_catalog_csv_in_parts(written.back(), *record_item.catalog);
  }
  if (record_item.catalog && output.wants("fits")) {
    written.emplace_back(stem.string() + ".cat.fits");
    write_catalog_fits(written.back(), *record_item.catalog, cards);
  }
  if (image.labels_out) {
    if (merged) renumber_labels(image, *merged);
    image.labels_out->commit();
    written.push_back(image.labels_out->final_path());
  }
  for (auto* out : {image.bgsub_out.get(), image.image_out.get()}) {
    if (out == nullptr) continue;
    out->commit();
    written.push_back(out->final_path());
  }
  return written;
}
}  // namespace

void finalize_tiled_image(RunContext& run, TiledImage& image) {
  // The image as one item: its reference, results and summed stage times.
  WorkItem record_item;
  record_item.ref = image.image;
  record_item.background = image.background;
  record_item.threshold = image.threshold;
  std::vector<fs::path> outputs;
  std::string error;
  {
    std::lock_guard lock(image.mutex);
    error = image.error;
  }
  if (error.empty()) {
    const auto start = std::chrono::steady_clock::now();
    try {
      outputs = write_image_outputs(run, image, record_item);
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
