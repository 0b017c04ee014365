// run_pipeline: set up threads, the input list, progress and trace, pick the backend's graph,
// and produce the run summary.
#include <spdlog/spdlog.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/task_arena.h>

#include <chrono>

#include "cpu_graph.hpp"
#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/version.hpp"
#include "imflow/io/nifti.hpp"
#include "item_source.hpp"
#include "mri_outputs.hpp"
#include "stages.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "gpu_graph.hpp"
#endif

namespace imflow {

namespace {
int gpu_count() {
#ifdef IMFLOW_HAVE_CUDA
  return cuda_devices_available();
#else
  return 0;
#endif
}
}  // namespace

std::string resolve_device(const std::string& requested) {
  if (requested == "cpu") return "cpu";
  const int gpus = gpu_count();
  if (requested == "cuda") {
    if (gpus == 0) {
#ifdef IMFLOW_HAVE_CUDA
      throw ConfigError("device: cuda was requested but no CUDA device is available");
#else
      throw ConfigError("device: cuda was requested but this imflow was built without CUDA (IMFLOW_CUDA=OFF)");
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
  const std::string device = resolve_device(pipeline.engine.device);
  const int threads = pipeline.engine.threads > 0 ? pipeline.engine.threads : tbb::info::default_concurrency();
  const int buffers = pipeline.engine.buffers > 0 ? pipeline.engine.buffers : 2 * threads;
  for (const auto& step : pipeline.steps) {
    if (device == "cuda" && !step->has_cuda()) {
      throw ConfigError("step '" + step->name() + "' has no CUDA implementation; use device: cpu");
    }
  }

  std::vector<std::filesystem::path> files = list_input_files(pipeline.input);
  if (files.empty()) spdlog::warn("{}: no input file matches the patterns", pipeline.input.dir.string());
  set_nifti_slice_axis(pipeline.input.nifti_axis);
  ItemSource source(files, pipeline.input.dir);
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
  Progress progress(static_cast<int64_t>(files.size()), options.progress);
  Trace trace;
  RunContext run(pipeline, summary, &progress, options.trace_path.empty() ? nullptr : &trace, options.stop);

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
  progress.finish();
  summary.finish(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (const std::string reason = run.fatal_reason(); !reason.empty()) {
    spdlog::error("run stopped: {}", reason);
    summary.set_stop_reason(reason);
  } else if (options.stop != nullptr && options.stop->load()) {
    summary.set_stop_reason("interrupted by a signal; items in flight were finished");
  }
  const auto summary_path = options.summary_path.empty() ? pipeline.output.dir / "summary.json" : options.summary_path;
  if (pipeline.output.wants("metrics")) write_metrics_csv(summary, pipeline.output.dir / "metrics.csv");
  summary.write(summary_path);
  if (!options.trace_path.empty()) trace.write(options.trace_path);
  return summary;
}

}  // namespace imflow
