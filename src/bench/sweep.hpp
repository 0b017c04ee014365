// `imflow bench`: the options, the sweep grid (every combination of the swept engine knobs) and
// the driver that runs warm-ups and timed repeats per point and returns bench.json's content.
#pragma once
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "imflow/pipeline.hpp"

namespace imflow::bench {

// One --sweep NAME=V1,V2,...: threads, buffers, streams or devices.
struct SweepAxis {
  std::string name;
  std::vector<int> values;
};
using PointParams = std::map<std::string, int>;

struct BenchOptions {
  std::filesystem::path out_dir = "bench-out";
  std::vector<SweepAxis> axes;
  int repeat = 3;
  int warmup = 1;
  int64_t images = 0;      // > 0: run on this many input files, cycling the directory's files
  bool gustafson = false;  // scaled size: images = base x workers (threads on CPU, streams on GPU)
  bool trace = false;      // Chrome trace of the last warm-up run of every point
  bool ceiling = false;    // also measure the input ceiling (input_ceiling.hpp) after the points
  bool verbose = false;    // keep the per-run info log lines
  std::string command_line;
};

// Parse "threads=1,2,4" (throws ConfigError naming the option).
SweepAxis parse_sweep(const std::string& spec);
// Every combination, the first axis varying slowest; one empty point when there are no axes.
std::vector<PointParams> expand_grid(const std::vector<SweepAxis>& axes);
// "threads=2 buffers=4" (or "default").
std::string point_label(const PointParams& params);
// The scaling axis: "streams" on the GPU, else "threads".
std::string scaling_axis(const std::string& device);

// Run the whole sweep with `pipeline` (its engine.device already resolved to cpu or cuda).
// Returns bench.json's content; on a failed point it stops there, with "status": "failed" and
// "error" naming the point (the caller exits non-zero).
nlohmann::json run_sweep(Pipeline& pipeline, const BenchOptions& options, const std::atomic<bool>* stop);

}  // namespace imflow::bench
