// Shared host stages: read, CPU processing, finish (write + summary + progress).
#include "stages.hpp"

#include <spdlog/spdlog.h>
#include <sys/statvfs.h>
#include <tbb/task_arena.h>

#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "companion_inputs.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/io/written_text.hpp"
#include "input_limits.hpp"
#include "item_warnings.hpp"
#include "manifest.hpp"
#include "merged_catalog_stream.hpp"
#include "tiled_image.hpp"
#include "writer.hpp"

namespace imflow {

StageTimer::StageTimer(RunContext& run, WorkItem& item, std::string stage, std::string track)
    : run_(run),
      item_(item),
      stage_(std::move(stage)),
      track_(std::move(track)),
      start_(Trace::Clock::now()),
      parts_(run.trace, track_, item.ref.index) {
  if (run.trace != nullptr) cpu_start_us_ = Trace::thread_cpu_us();
}

StageTimer::~StageTimer() {
  if (!recorded_) return;
  const auto end = Trace::Clock::now();
  item_.times.push_back({stage_, std::chrono::duration<double>(end - start_).count()});
  if (run_.trace != nullptr) {
    std::string args = "{\"item\":" + std::to_string(item_.ref.index);
    if (item_.ref.tiled) {  // a tile: say which, and of which image (docs/tiling.md)
      args += ",\"tile\":" + std::to_string(item_.ref.tile) + ",\"tiles\":" + std::to_string(item_.ref.tiles) +
              ",\"image\":" + std::to_string(tile_image_index(item_.ref));
    }
    run_.trace->add(track_, stage_, run_.trace->to_us(start_), std::chrono::duration<double, std::micro>(end - start_).count(),
                    Trace::with_cpu_us(args + "}", cpu_start_us_));
  }
}

std::string item_name(const ItemRef& ref) {
  std::string name = ref.path.string();
  if (ref.hdu > 0) name += "[hdu " + std::to_string(ref.hdu) + "]";
  if (ref.planes > 1) name += "[plane " + std::to_string(ref.plane) + "]";
  return name;
}

std::string step_failure(const std::string& step, const std::exception& error, const std::filesystem::path& file) {
  if (dynamic_cast<const std::bad_alloc*>(&error) != nullptr) return "step " + step + ": out of memory";
  std::string_view why = error.what();
  const std::string named = file.string() + ": ";
  if (!file.empty() && why.starts_with(named)) why.remove_prefix(named.size());  // the item's name says it
  return "step " + step + ": " + std::string(why);
}

std::string worker_track(const std::string& stage) {
  return stage + " #" + std::to_string(tbb::this_task_arena::current_thread_index());
}

void read_stage(RunContext& run, WorkItem& item, ItemRef ref) {
  item.reset(std::move(ref));
  if (!item.ref.error.empty()) {
    item.fail(item.ref.error);
    return;
  }
  if (item.ref.resident_rows > 0) return;  // read by the CUDA graph straight into GPU memory (gpu_resident.cpp)
  StageTimer timer(run, item, "read", worker_track("read"));
  try {
    const InputFormat* format = input_format_for(item.ref.path);
    if (format == nullptr) throw std::runtime_error(item.ref.path.string() + ": unknown file format");
    check_input_file(item.ref.path, run.pipeline.input.max_file_bytes, false);  // it may have changed since the scan
    ReadLimits limits;
    limits.max_pixels = run.pipeline.input.max_pixels;
    ReadLimits image_limits = limits;
    if (run.float32_swap_on_device && !item.ref.tiled) image_limits.float32_swap_deferred = &item.pixels_big_endian;
    if (is_fits_input(item.ref.path)) image_limits.header_records = &item.fits_header;  // the outputs' WCS
    if (item.ref.tiled) {  // counted over the tiles' cores, warned about once for the image
      image_limits.out_of_range_pixels = &item.ref.tiled->out_of_range_pixels;
      image_limits.out_of_range_core = item.ref.core;
    }
    item.input_bytes = format->read(item.ref, item.pixels, image_limits);
    if (run.pipeline.input.has_companions()) read_companions(run.pipeline.input, item, limits);
  } catch (const std::bad_alloc&) {
    item.fail(item_name(item.ref) + ": out of memory while reading");
  } catch (const std::exception& error) {
    item.fail(error.what());
  }
}

void cpu_process_stage(RunContext& run, WorkItem& item) {
  if (item.ref.tiled) return tile_cpu_process_stage(run, item);
  if (item.status == ItemStatus::failed) return;
  for (const auto& step : run.pipeline.steps) {
    StageTimer timer(run, item, step->name(), worker_track("cpu"));
    try {
      step->run_cpu(item);
    } catch (const std::exception& error) {
      item.fail(item_name(item.ref) + ": " + step_failure(step->name(), error, item.ref.path));
      return;
    }
  }
}

std::string output_device_problem(const std::filesystem::path& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return "";
  if ((fs.f_flag & ST_RDONLY) != 0) return dir.string() + ": the output file system is read-only";
  if (static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize < (1ull << 20)) {
    return dir.string() + ": the output file system is full";
  }
  return "";
}

void finish_stage(RunContext& run, WorkItem& item) {
  if (item.ref.tiled) {
    if (run.merged_catalog != nullptr) run.merged_catalog->give_up();  // its record comes with its last tile
    return tile_finish_stage(run, item);
  }
  std::vector<std::filesystem::path> outputs;
  if (item.status != ItemStatus::failed) {
    StageTimer timer(run, item, "write", worker_track("write"));
    add_result_warnings(item);
    try {
      outputs = write_outputs(item, run.pipeline.output);
      item.status = ItemStatus::ok;
    } catch (const std::exception& error) {
      item.fail(item_name(item.ref) + ": cannot write outputs: " + error.what());
      // A full or read-only disk fails every later item too: stop taking new ones (exit 3).
      if (const std::string problem = output_device_problem(run.pipeline.output.dir); !problem.empty()) {
        run.halt_with(problem + "; finished items are kept and listed in the manifest");
      }
    }
  }
  // One record for the manifest, the merged catalog and the summary (made again if the manifest
  // fails the item).
  nlohmann::json record = RunSummary::item_record(item, outputs);
  if (run.manifest != nullptr) {
    try {
      StageTimer timer(run, item, "manifest", worker_track("write"));
      run.manifest->append(item.ref, outputs, record);
    } catch (const std::exception& error) {
      if (item.status != ItemStatus::failed) item.fail(item_name(item.ref) + ": cannot record in the manifest: " + error.what());
      outputs.clear();
      record = RunSummary::item_record(item, outputs);
    }
  }
  if (item.status == ItemStatus::failed) {
    spdlog::error("{}", item.error);
    if (run.pipeline.engine.fail_fast) run.halt_after_failure(item_name(item.ref));
  }
  if (run.merged_catalog != nullptr) {  // its rows of OUT/catalog.csv
    try {
      MergedCatalogStream::Part part;
      {
        StageTimer timer(run, item, "merge catalog", worker_track("write"));
        part = run.merged_catalog->part(record);
      }
      // Timed only where the thread waited for the writer or copied earlier items' parts into
      // the file: where the run outpaces the writer.
      StageTimer wait(run, item, "catalog.csv wait", worker_track("write"));
      const MergedCatalogStream::Queued queued = run.merged_catalog->queue(item.ref.index, std::move(part));
      if (!queued.waited && !queued.copied) wait.discard();
    } catch (const std::exception&) {
      run.merged_catalog->give_up();  // the merge after the run writes it
    }
  }
  forget_written_text();  // the outputs' texts this thread noted were for this item's records
  try {
    record["seconds"] = RunSummary::item_seconds(item);  // with the merge's time
    run.summary.add_record(std::move(record), item.status == ItemStatus::ok, item.input_bytes,
                           item.plane_width() * item.plane_height(), item.times);
  } catch (const std::bad_alloc&) {
    spdlog::error("{}: out of memory while recording the result", item_name(item.ref));
  }
  if (run.progress != nullptr) {
    run.progress->item_done(item.ref.last_of_file, item.input_bytes, item.status == ItemStatus::failed);
  }
}

}  // namespace imflow
