// One bench run: peak RSS reset and read back, device memory sampling, run_pipeline, and the
// per-run record (throughput, per-stage busy seconds, workers and utilisation, overlap).
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "imflow/engine.hpp"

namespace imflow::bench {

// What utilisation means in bench.json (also written there).
inline constexpr const char* kUtilisationDefinition =
    "utilisation(stage) = busy_seconds(stage) / (wall_seconds x workers(stage)); busy_seconds is the "
    "sum over items of the time spent in the stage; workers: host stages (read, CPU steps, write) = "
    "threads (they share one TBB arena); h2d, d2h and kernels (union of kernel intervals) = GPUs "
    "(one copy engine per direction, one compute queue); GPU steps = streams x GPUs (stream occupancy). "
    "host_pool = sum of host stage busy / (wall x threads); cpu_utilisation = process CPU seconds / "
    "(wall x threads); contended: cpu_utilisation < 0.75 x host_pool (other load on the machine, or I/O waits).";

// The number of workers that can run `stage` at once (see kUtilisationDefinition).
double stage_workers(const std::string& stage, bool gpu_stage, const nlohmann::json& engine);

// Run once and return the record: wall_seconds, images_per_second, megabytes_per_second,
// items, failed, stop_reason, peak_rss_megabytes, peak_device_megabytes (null without CUDA),
// copy_overlap_fraction (null on the CPU), stage_busy_seconds, stage_workers, utilisation,
// host_pool_utilisation, cpu_seconds, cpu_utilisation, bottleneck {stage, utilisation}, token_bound {tokens,
// service_seconds_per_item, images_per_second = tokens / service time, fraction = measured / bound}.
// `engine` is the effective engine (device, threads, buffers, streams, devices).
nlohmann::json measured_run(const Pipeline& pipeline, const RunOptions& options, const nlohmann::json& engine);

// Peak RSS of this process since the last reset_peak_rss(), in bytes; reset returns false when
// /proc/self/clear_refs cannot be written (the peak is then the process's lifetime peak).
bool reset_peak_rss();
int64_t peak_rss_since_reset();

}  // namespace imflow::bench
