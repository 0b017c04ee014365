// run_pipeline: set up threads, the input list, progress and trace, pick the backend's graph,
// and produce the run summary.
#include <spdlog/spdlog.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/task_arena.h>

#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <vector>

#include "cpu_graph.hpp"
#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/version.hpp"
#include "imflow/io/nifti.hpp"
#include "item_source.hpp"
#include "items_in_flight.hpp"
#include "imflow/io/atomic_file.hpp"
#include "manifest.hpp"
#include "merged_catalog_stream.hpp"
#include "ldac_merge.hpp"
#include "summary_merge.hpp"
#include "mri_outputs.hpp"
#include "stages.hpp"
#include "tiled_image.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "gpu_graph.hpp"
#endif

namespace imflow {

int cuda_device_count() {
#ifdef IMFLOW_HAVE_CUDA
  return cuda_devices_available();
#else
  return 0;
#endif
}

namespace {
// The output directory exists, is writable, and is not the input directory or inside it (outputs
// could overwrite inputs or be read back as inputs). Throws OutputError (exit 3) / ConfigError.
void prepare_output_dir(const Pipeline& pipeline) {
  namespace fs = std::filesystem;
  const fs::path& out = pipeline.output.dir;
  std::error_code error;
  if (fs::is_directory(pipeline.input.dir, error)) {  // checked before anything is created there
    const fs::path input = fs::weakly_canonical(pipeline.input.dir, error);
    const fs::path output = fs::weakly_canonical(out, error);
    const fs::path inside = output.lexically_relative(input);
    if (!error && !inside.empty() && *inside.begin() != "..") {
      throw ConfigError(out.string() + ": the output directory is (or is inside) the input directory " +
                        pipeline.input.dir.string() + " (following symlinks); choose another --output");
    }
  }
  error.clear();
  fs::create_directories(out, error);
  if (error) throw OutputError(out.string() + ": cannot create the output directory: " + error.message());
  if (!fs::is_directory(out, error)) throw OutputError(out.string() + ": the output path is not a directory");
  std::string probe = (out / ".imflow-write-test-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0 || ::write(fd, "x", 1) != 1) {
    const std::string reason = std::strerror(errno);
    if (fd >= 0) {
      ::close(fd);
      ::unlink(probe.c_str());
    }
    throw OutputError(out.string() + ": the output directory is not writable: " + reason);
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

// What must match for --resume to reuse results: the steps with their parameters, the output
// formats and the NIfTI slicing axis (not threads, devices or paths).
std::string config_key(const Pipeline& pipeline) {
  const YAML::Node resolved = pipeline.resolved();
  YAML::Node key;
  key["steps"] = resolved["steps"];
  key["formats"] = resolved["output"]["formats"];
  key["nifti_axis"] = resolved["input"]["nifti_axis"];
  if (resolved["input"]["weight"]) key["weight"] = resolved["input"]["weight"];
  if (resolved["input"]["mask"]) key["mask"] = resolved["input"]["mask"];
  if (resolved["input"]["flags"]) key["flags"] = resolved["input"]["flags"];
  if (resolved["input"]["detect"]) key["detect"] = resolved["input"]["detect"];
  YAML::Emitter out;
  out << YAML::Flow << key;
  const std::string text = out.c_str();
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08lx",
                ::crc32(0L, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
  return hex;
}
}  // namespace

std::string resolve_device(const std::string& requested) {
  if (requested == "cpu") return "cpu";
  const int gpus = cuda_device_count();
  if (requested == "cuda") {
    // A valid pipeline this machine cannot run: the run cannot start (exit 3, not 1).
    if (gpus == 0) {
#ifdef IMFLOW_HAVE_CUDA
      throw std::runtime_error("device: cuda was requested but no CUDA device is available");
#else
      throw std::runtime_error("device: cuda was requested but this imflow was built without CUDA (IMFLOW_CUDA=OFF)");
#endif
    }
    return "cuda";
  }
  if (gpus > 0) return "cuda";
  spdlog::warn("device auto: no CUDA device available, running on the CPU");
  return "cpu";
}

RunSummary run_pipeline(const Pipeline& pipeline, const RunOptions& options) {
  validate_engine(pipeline.engine);
  std::string device = resolve_device(pipeline.engine.device);
  const int threads = pipeline.engine.threads > 0 ? pipeline.engine.threads : tbb::info::default_concurrency();
  for (const auto& step : pipeline.steps) {
    if (device != "cuda" || step->has_cuda()) continue;
    if (pipeline.engine.device != "auto") {
      throw ConfigError("step '" + step->name() + "' has no CUDA implementation (with these parameters); use device: cpu");
    }
    spdlog::warn("device auto: step '{}' has no CUDA implementation with these parameters; running on the CPU",
                 step->name());
    device = "cpu";
    break;
  }
  const TilingPlan tiling = plan_tiling(pipeline);  // throws ConfigError (exit 1)
  if (!tiling.off_reason.empty()) spdlog::debug("tiling is off: {}", tiling.off_reason);

  const auto listing = std::chrono::steady_clock::now();
  std::vector<std::filesystem::path> files = without_companion_files(list_input_files(pipeline.input),
                                                                     pipeline.input.companions());
  spdlog::debug("listed {} input files in {:.3f} s", files.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - listing).count());
  if (files.empty()) throw InputError(pipeline.input.dir.string() + ": no input file matches the patterns (input.patterns)");
  // The CPU path's work items in flight (the CUDA graph chooses its pinned ones: gpu_graph.cpp).
  const ItemsInFlight cpu_buffers = cpu_buffers_for_run(
      pipeline.engine, threads, device == "cpu" ? first_plane_bytes(files, &tiling) : 0);
  const int buffers = static_cast<int>(cpu_buffers.items);
  if (device == "cpu" && cpu_buffers.automatic) spdlog::info("{} work items in flight ({})", buffers, cpu_buffers.reason);
  set_nifti_slice_axis(pipeline.input.nifti_axis);
  set_nifti_cache_bytes(static_cast<uint64_t>(pipeline.input.nifti_cache_mb) << 20);
  prepare_output_dir(pipeline);
  if (!options.resume && std::filesystem::exists(pipeline.output.dir / options.manifest_name)) {
    spdlog::warn("{}: an earlier run's outputs are here; this run replaces its manifest and the outputs of its own "
                 "inputs, and leaves the others as they are (--resume continues that run instead)",
                 pipeline.output.dir.string());
  }
  set_output_fsync(pipeline.output.fsync);
  Manifest manifest(pipeline.output.dir, config_key(pipeline), options.resume, pipeline.output.manifest_sync,
                    options.manifest_name, pipeline.input.companions());
  ItemSource source(files, pipeline.input.dir);
  if (options.file_feed) source.set_file_feed(options.file_feed);
  source.set_max_file_bytes(pipeline.input.max_file_bytes);
  source.set_extnames(pipeline.input.extnames);
  source.set_companion_extnames(pipeline.input.companions());
  RunSummary summary;
  summary.set_context({{"imflow_version", kVersion},
                       {"pipeline", pipeline.source},
                       {"input", pipeline.input.dir.string()},
                       {"output", pipeline.output.dir.string()},
                       {"device", device},
                       {"threads", threads},
                       {"buffers", buffers},
                       {"streams", device == "cuda" ? pipeline.engine.streams : 0},
                       {"buffers_per_stream", device == "cuda" ? pipeline.engine.buffers_per_stream : 0},
                       {"files", files.size()}});
  summary.set("tiling", {{"size", tiling.size}, {"halo", tiling.halo}});
  if (device == "cpu") summary.set("cpu_buffers", cpu_buffers.to_json());
  if (pipeline.output.wants("metrics")) summary.derive_lines(metrics_csv_row);  // rows made in the writers
  Progress progress(static_cast<int64_t>(files.size()), options.progress, options.counts);
  Trace trace;
  const std::atomic<bool>* stop = options.stop != nullptr || options.counts == nullptr ? options.stop : &options.counts->stop;
  RunContext run(pipeline, summary, &progress, options.trace_path.empty() ? nullptr : &trace, stop);
  run.manifest = &manifest;
  // OUT/catalog.csv made while the run goes on (a resumed run merges after its last item: the
  // items done before are not in the stream; one file, e.g. a mosaic, has nothing to overlap).
  std::unique_ptr<MergedCatalogStream> merged_catalog;
  const bool merges = pipeline.output.wants_merged_catalog();
  if (options.write_summary && merges && !options.resume && files.size() > 1) {
    merged_catalog = std::make_unique<MergedCatalogStream>(pipeline.output.dir / "catalog.csv", size_t{256} << 20);
    run.merged_catalog = merged_catalog.get();
  }
  TileRun tile_run(run, tiling);
  if (tiling.size > 0) {
    run.tiles = &tile_run;
    source.set_tiling([&](const ItemRef& plane, const PlaneInfo& info) { return tile_run.tiles_of(plane, info); },
                      [&](ItemRef& first_tile) { tile_run.prepare(first_tile); });
  } else if (tiling.whole_above > 0) {  // tiling is off for this pipeline: tiles_of logs the planes it would have
    run.tiles = &tile_run;             // cut, or makes them GPU-resident images
    source.set_tiling([&](const ItemRef& plane, const PlaneInfo& info) { return tile_run.tiles_of(plane, info); },
                      [](ItemRef&) {});
  }
  if (options.resume) {
    // Runs in the (serial) source node: an item finished before, unchanged and intact is not redone.
    source.set_skip([&](const ItemRef& ref) {
      nlohmann::json previous = manifest.done_before(ref);
      if (previous.is_null()) return false;
      previous["file"] = ref.path.string();
      summary.add_skipped(std::move(previous));
      progress.item_done(ref.last_of_file, 0, false);
      return true;
    });
  }

  spdlog::info("imflow {}: {} files from {} on {} ({} threads)", kVersion, files.size(), pipeline.input.dir.string(),
               device, threads);
  const auto start = std::chrono::steady_clock::now();
  {
    tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, threads);
    tbb::task_arena arena(threads);
    arena.execute([&] {
#ifdef IMFLOW_HAVE_CUDA
      if (device == "cuda") {
        run_gpu_graph(run, source, threads, pipeline.engine);
        return;
      }
#endif
      run_cpu_graph(run, source, threads, buffers);
    });
  }
  tile_run.record_unfinished();
  progress.finish();
  summary.finish(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (const std::string reason = run.fatal_reason(); !reason.empty()) {
    spdlog::error("run stopped: {}", reason);
    summary.set_stop_reason(reason);
  } else if (stop != nullptr && stop->load()) {
    summary.set_stop_reason("interrupted by a signal; items in flight were finished");
  }
  if (const std::string failed = run.first_failure(); !failed.empty()) {
    spdlog::warn("fail_fast: stopped after {} failed; the inputs after it were not processed", failed);
    summary.set("fail_fast", {{"stopped_after", failed}, {"note", "the inputs after it were not processed"}});
  }
  if (!options.write_summary) {
    if (!options.trace_path.empty()) trace.write(options.trace_path);
    return summary;
  }
  // The files are independent: write them at once (summary.json here, the others beside it);
  // get() rethrows a writer's error once all have finished.
  const auto writing = std::chrono::steady_clock::now();
  const auto summary_path = options.summary_path.empty() ? pipeline.output.dir / "summary.json" : options.summary_path;
  std::vector<std::future<void>> writers;
  if (pipeline.output.wants("metrics")) {
    writers.push_back(std::async(std::launch::async, [&] { write_metrics_csv(summary, pipeline.output.dir / "metrics.csv"); }));
  }
  if (merges) {
    writers.push_back(std::async(std::launch::async, [&] {
      std::vector<const nlohmann::json*> records;
      for (const RunSummary::Record* record : summary.ordered_records()) records.push_back(&record->json);
      if (merged_catalog == nullptr || !merged_catalog->finish(records)) {
        write_merged_catalog(summary, pipeline.output.dir / "catalog.csv");
      }
    }));
  }
  if (pipeline.output.wants("ldac")) {
    writers.push_back(std::async(std::launch::async, [&] { write_mef_ldacs(summary); }));
  }
  if (!options.trace_path.empty()) {
    writers.push_back(std::async(std::launch::async, [&] { trace.write(options.trace_path); }));
  }
  summary.write(summary_path);
  for (auto& writer : writers) writer.get();
  spdlog::debug("summary, metrics, merged catalog and trace written in {:.3f} s",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - writing).count());
  return summary;
}

}  // namespace imflow
