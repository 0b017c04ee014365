// One bench run: clear the RSS high-water mark, sample GPU memory, run, derive utilisation.
#include "bench/measure.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>

#include "bench/machine.hpp"
#include "imflow/summary.hpp"

namespace imflow::bench {

namespace {
// User + system CPU seconds of this process so far.
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}
}  // namespace

bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  if (!clear) return false;
  clear << "5";  // 5: reset the peak RSS (VmHWM) of this process
  clear.flush();
  return static_cast<bool>(clear);
}

int64_t peak_rss_since_reset() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:   1234 kB"
  }
  return peak_rss_bytes();
}

double stage_workers(const std::string& stage, bool gpu_stage, const nlohmann::json& engine) {
  const double threads = engine.at("threads").get<double>();
  if (!gpu_stage) return threads;
  const double gpus = std::max(1, engine.value("devices", 1));
  if (stage == "h2d" || stage == "d2h" || stage == "kernels") return gpus;
  return gpus * std::max(1, engine.value("streams", 1));
}

nlohmann::json measured_run(const Pipeline& pipeline, const RunOptions& options, const nlohmann::json& engine) {
  const bool gpu = engine.at("device") == "cuda";
  const bool rss_reset = reset_peak_rss();
  DeviceMemorySampler sampler(gpu ? engine.value("devices", 1) : 0);
  const double cpu_before = cpu_seconds();
  const auto started = std::chrono::steady_clock::now();
  const RunSummary summary = run_pipeline(pipeline, options);
  // The whole call, as a user waits for it: the run's wall plus listing the inputs, allocating
  // the pinned buffers and, after the last item, the summary, the merged catalog and the trace.
  const double end_to_end = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double cpu_used = cpu_seconds() - cpu_before;
  const double device_mb = sampler.stop_peak_megabytes();
  const nlohmann::json json = summary.to_json();
  const nlohmann::json& totals = json.at("totals");

  nlohmann::json run;
  run["wall_seconds"] = totals.at("wall_seconds");
  run["images_per_second"] = totals.at("images_per_second");
  run["end_to_end_seconds"] = end_to_end;
  run["end_to_end_images_per_second"] =
      totals.at("images_per_second").get<double>() * totals.at("wall_seconds").get<double>() / std::max(end_to_end, 1e-9);
  run["megabytes_per_second"] = totals.at("megabytes_per_second");
  run["items"] = totals.at("items");
  run["failed"] = totals.at("failed");
  run["input_megabytes"] = totals.at("input_megabytes");
  run["stop_reason"] = summary.stop_reason();
  run["peak_rss_megabytes"] = (rss_reset ? peak_rss_since_reset() : peak_rss_bytes()) / 1e6;
  run["peak_rss_scope"] = rss_reset ? "run" : "process";
  run["peak_device_megabytes"] = device_mb >= 0 ? nlohmann::json(device_mb) : nlohmann::json(nullptr);

  // Busy seconds per stage; on the GPU the kernel union per device is added as "kernels", and
  // h2d / d2h are the unions of the copy intervals (summed per item, copies of several streams
  // queued behind one copy engine would be counted more than once).
  std::map<std::string, double> busy = totals.at("stage_busy_seconds").get<std::map<std::string, double>>();
  std::set<std::string> gpu_stages;
  run["copy_overlap_fraction"] = nullptr;
  if (json.contains("gpu")) {
    const auto& g = json.at("gpu");
    run["copy_overlap_fraction"] = g.value("copy_overlap_fraction", 0.0);
    double kernels = 0, h2d = 0, d2h = 0;
    for (const auto& d : g.at("devices")) {
      kernels += d.value("kernel_busy_seconds", 0.0);
      h2d += d.value("h2d_busy_seconds", 0.0);
      d2h += d.value("d2h_busy_seconds", 0.0);
    }
    busy["kernels"] = kernels;
    if (busy.count("h2d") > 0) busy["h2d"] = h2d;
    if (busy.count("d2h") > 0) busy["d2h"] = d2h;
    gpu_stages = {"h2d", "d2h", "kernels"};
    for (const auto& step : pipeline.steps) gpu_stages.insert(step->name());
  }
  const double wall = std::max(totals.at("wall_seconds").get<double>(), 1e-9);
  nlohmann::json workers, util;
  double host_busy = 0;
  std::string bottleneck;
  double worst = -1;
  for (const auto& [stage, seconds] : busy) {
    const bool on_gpu = gpu_stages.count(stage) > 0;
    const double n = stage_workers(stage, on_gpu, engine);
    const double u = seconds / (wall * n);
    workers[stage] = n;
    util[stage] = u;
    if (!on_gpu) host_busy += seconds;
    if (u > worst) worst = u, bottleneck = stage;
  }
  run["stage_busy_seconds"] = busy;
  run["stage_workers"] = workers;
  run["utilisation"] = util;
  run["host_pool_utilisation"] = host_busy / (wall * engine.at("threads").get<double>());
  // CPU time the process got per thread of wall time: well below host_pool_utilisation means the
  // threads were busy in stages but descheduled (other load on the machine) or waiting on I/O.
  run["cpu_seconds"] = cpu_used;
  run["cpu_utilisation"] = cpu_used / (wall * engine.at("threads").get<double>());
  run["bottleneck"] = {{"stage", bottleneck}, {"utilisation", std::max(worst, 0.0)}};
  // Little's law: at most `tokens` items are in flight, each needing `service` seconds of stage
  // time, so throughput <= tokens / service; a fraction near 1 means the run is latency-bound.
  double service = 0;
  for (const auto& [stage, seconds] : busy) service += stage == "kernels" ? 0.0 : seconds;
  const double items = std::max(1.0, totals.at("items").get<double>());
  // Pinned items per stream as the run chose them (buffers_per_stream 0 is chosen per run: items_in_flight.hpp).
  double per_stream = engine.at("buffers").get<double>();
  if (json.contains("gpu_batch")) run["gpu_batch"] = json.at("gpu_batch");  // items per launch (1: not batched)
  if (json.contains("gpu_batch_choice")) run["gpu_batch_choice"] = json.at("gpu_batch_choice");
  if (json.contains("gpu_tokens")) {
    run["gpu_tokens"] = json.at("gpu_tokens");
    per_stream = json.at("gpu_tokens").at("buffers_per_stream").get<double>();
  } else if (json.contains("cpu_buffers")) {  // the CPU path's choice within memory_mb
    run["cpu_buffers"] = json.at("cpu_buffers");
    per_stream = json.at("cpu_buffers").at("items").get<double>();
  }
  // The GPU paths report their pool exactly (batch mode's is not a whole number per stream).
  // A pool that grew during the run (TokenTuner) counts at its final size.
  const double tokens = json.contains("gpu_tokens")
                            ? json.at("gpu_tokens").value("items_at_end", json.at("gpu_tokens").at("items").get<double>())
                            : per_stream * (gpu ? engine.at("streams").get<double>() * engine.value("devices", 1) : 1.0);
  const double bound = service > 0 ? tokens * items / service : 0.0;
  run["token_bound"] = {{"tokens", tokens}, {"service_seconds_per_item", service / items},
                        {"images_per_second", bound},
                        {"fraction", bound > 0 ? totals.at("images_per_second").get<double>() / bound : 0.0}};
  return run;
}

}  // namespace imflow::bench
