// The bench driver: grid expansion, inputs, warm-ups (traced, not recorded), timed repeats.
#include "bench/sweep.hpp"

#include <spdlog/spdlog.h>
#include <tbb/info.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "bench/input_ceiling.hpp"
#include "bench/inputs.hpp"
#include "bench/machine.hpp"
#include "bench/measure.hpp"
#include "bench/output_ceiling.hpp"
#include "bench/report.hpp"
#include "imflow/engine.hpp"
#include "imflow/errors.hpp"

namespace imflow::bench {

namespace fs = std::filesystem;

namespace {
struct PointFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Apply the point to `engine`; return the effective engine (what actually runs).
nlohmann::json configure(EngineConfig& engine, const PointParams& params, const std::string& device) {
  for (const auto& [name, value] : params) {
    if (name == "threads") engine.threads = value;
    if (name == "streams") engine.streams = value;
    if (name == "batch") engine.batch = value;
    if (name == "buffers") (device == "cuda" ? engine.buffers_per_stream : engine.buffers) = value;
    if (name == "devices") {
      engine.devices.clear();
      for (int d = 0; d < value; ++d) engine.devices.push_back(d);
    }
  }
  validate_engine(engine);
  const int threads = engine.threads > 0 ? engine.threads : tbb::info::default_concurrency();
  const bool gpu = device == "cuda";
  const int devices = gpu ? (engine.devices.empty() ? std::max(1, gpu_count()) : static_cast<int>(engine.devices.size())) : 1;
  return {{"device", device},
          {"threads", threads},
          {"buffers", gpu ? engine.buffers_per_stream : (engine.buffers > 0 ? engine.buffers : 2 * threads)},
          {"streams", gpu ? engine.streams : 0},
          {"batch", gpu ? engine.batch : 1},  // 0: chosen per run (the run's choice replaces it)
          {"devices", devices}};
}

void check_axes(std::vector<SweepAxis>& axes, const std::string& device) {
  const int gpus = gpu_count();
  for (auto it = axes.begin(); it != axes.end();) {
    if ((it->name == "streams" || it->name == "batch") && device != "cuda") {
      spdlog::warn("--sweep {}: no effect on the CPU backend; ignored", it->name);
      it = axes.erase(it);
      continue;
    }
    for (int v : it->values) {
      if (it->name == "devices" && v > (device == "cuda" ? gpus : 1)) {
        throw ConfigError("--sweep devices=" + std::to_string(v) + ": only " + std::to_string(device == "cuda" ? gpus : 1) +
                          " device(s) available on the " + device + " backend");
      }
    }
    ++it;
  }
}

void check_run(const nlohmann::json& run, const std::string& label, const char* what) {
  const std::string reason = run.value("stop_reason", "");
  if (run.value("failed", 0) > 0 || !reason.empty()) {
    throw PointFailure("point " + label + " (" + what + "): " + std::to_string(run.value("failed", 0)) + " of " +
                       std::to_string(run.value("items", 0)) + " items failed" + (reason.empty() ? "" : "; " + reason));
  }
  if (run.value("items", 0) == 0) throw PointFailure("point " + label + " (" + what + "): no items were processed");
}
}  // namespace

std::string scaling_axis(const std::string& device) { return device == "cuda" ? "streams" : "threads"; }

nlohmann::json run_sweep(Pipeline& pipeline, const BenchOptions& options, const std::atomic<bool>* stop) {
  const std::string device = pipeline.engine.device;
  std::vector<SweepAxis> axes = options.axes;
  check_axes(axes, device);
  const std::vector<PointParams> grid = expand_grid(axes);
  const EngineConfig base_engine = pipeline.engine;
  const std::string axis = scaling_axis(device);

  fs::create_directories(options.out_dir);
  const fs::path original_input = pipeline.input.dir;
  const std::vector<fs::path> files = list_input_files(pipeline.input);
  if (files.empty()) throw InputError(original_input.string() + ": no input file matches the patterns (input.patterns)");
  const int64_t base = options.images > 0 ? options.images : static_cast<int64_t>(files.size());
  std::optional<ScratchDir> inputs;
  auto use_inputs = [&](int64_t count) {
    inputs.emplace(options.out_dir / ".bench-inputs");
    make_cycled_inputs(files, original_input, count, inputs->path());
    pipeline.input.dir = inputs->path();
    pipeline.input.recursive = true;
  };
  if (options.images > 0 && !options.gustafson) use_inputs(options.images);
  ScratchDir scratch(options.out_dir / ".bench-scratch");
  if (options.trace) fs::create_directories(options.out_dir / "traces");

  nlohmann::json bench;
  bench["mode"] = options.gustafson ? "scaled-size" : "fixed-size";
  bench["scaling_axis"] = axis;
  bench["utilisation_definition"] = kUtilisationDefinition;
  nlohmann::json sweeps = nlohmann::json::object();
  for (const auto& a : axes) sweeps[a.name] = a.values;
  bench["sweeps"] = sweeps;
  bench["points"] = nlohmann::json::array();
  bench["status"] = "ok";

  const auto quiet = spdlog::get_level();
  if (!options.verbose) spdlog::set_level(spdlog::level::warn);
  try {
    for (size_t p = 0; p < grid.size(); ++p) {
      const std::string label = point_label(grid[p]);
      pipeline.engine = base_engine;
      const nlohmann::json engine = configure(pipeline.engine, grid[p], device);
      if (options.gustafson) use_inputs(base * engine.at(axis).get<int64_t>());
      auto run_once = [&](const fs::path& trace) {
        if (stop != nullptr && stop->load()) throw PointFailure("interrupted before point " + label);
        scratch.clear();
        pipeline.output.dir = scratch.path() / "out";
        RunOptions run_options;
        run_options.summary_path = scratch.path() / "summary.json";
        run_options.trace_path = trace;
        run_options.stop = stop;
        return measured_run(pipeline, run_options, engine);
      };
      nlohmann::json point = {{"id", p}, {"label", label}, {"params", grid[p]}, {"engine", engine}};
      const int warmups = options.warmup > 0 ? options.warmup : (options.trace ? 1 : 0);
      for (int w = 0; w < warmups; ++w) {
        fs::path trace;
        if (options.trace && w == warmups - 1) {
          trace = options.out_dir / "traces" / ("point-" + std::to_string(p) + ".trace.json");
          point["trace"] = fs::relative(trace, options.out_dir).string();
        }
        check_run(run_once(trace), label, "warm-up");
      }
      std::vector<nlohmann::json> repeats;
      for (int r = 0; r < options.repeat; ++r) {
        repeats.push_back(run_once({}));
        check_run(repeats.back(), label, ("repeat " + std::to_string(r + 1)).c_str());
      }
      point.update(aggregate_repeats(repeats));
      if (repeats.front().contains("gpu_batch")) point["engine"]["batch"] = repeats.front().at("gpu_batch");
      if (repeats.front().contains("gpu_batch_choice")) {  // what an automatic batch chose
        point["engine"]["batch_automatic"] = repeats.front().at("gpu_batch_choice").at("automatic");
      }
      if (repeats.front().contains("gpu_tokens")) {  // what an automatic buffers_per_stream chose
        point["engine"]["buffers"] = repeats.front().at("gpu_tokens").at("buffers_per_stream");
        point["engine"]["buffers_automatic"] = repeats.front().at("gpu_tokens").at("automatic");
        // A pool that limited a run grew during it (TokenTuner): the largest it reached.
        int64_t grown = 0;
        for (const auto& run : repeats) grown = std::max(grown, run.at("gpu_tokens").value("items_at_end", int64_t{0}));
        if (grown > repeats.front().at("gpu_tokens").at("items").get<int64_t>()) point["engine"]["items_at_end"] = grown;
      } else if (repeats.front().contains("cpu_buffers")) {  // the CPU buffers chosen within memory_mb
        point["engine"]["buffers"] = repeats.front().at("cpu_buffers").at("items");
        point["engine"]["buffers_automatic"] = repeats.front().at("cpu_buffers").at("automatic");
      }
      double load = 0;
      if (getloadavg(&load, 1) == 1) point["load_average_1m"] = load;  // at the end of the point
      point["files"] = options.gustafson ? base * engine.at(axis).get<int64_t>() : (options.images > 0 ? base : static_cast<int64_t>(files.size()));
      spdlog::set_level(quiet);
      spdlog::info("point {}/{} {}: {:.1f} images/s (min {:.1f}, max {:.1f}), wall {:.3f} s, bottleneck {} ({:.0f}%)",
                   p + 1, grid.size(), label, point["images_per_second"]["median"].get<double>(),
                   point["images_per_second"]["min"].get<double>(), point["images_per_second"]["max"].get<double>(),
                   point["wall_seconds"]["median"].get<double>(), point["bottleneck"]["stage"].get<std::string>(),
                   100 * point["bottleneck"]["utilisation"].get<double>());
      if (point["contended"].get<bool>()) {
        spdlog::warn("point {}: threads were busy {:.0f}% of the time but the process got {:.0f}% CPU per thread: "
                     "other load on the machine or I/O waits (fsync); treat this point with care", label,
                     100 * point["host_pool_utilisation"].get<double>(), 100 * point["cpu_utilisation"].get<double>());
      }
      if (!options.verbose) spdlog::set_level(spdlog::level::warn);
      bench["points"].push_back(std::move(point));
    }
  } catch (const PointFailure& failure) {
    bench["status"] = "failed";
    bench["error"] = failure.what();
  } catch (const std::exception& error) {
    bench["status"] = "failed";
    bench["error"] = "point " + std::to_string(bench["points"].size()) + ": " + error.what();
  }
  spdlog::set_level(quiet);
  pipeline.engine = base_engine;
  if (options.ceiling && bench["status"] == "ok") {
    int threads = 1;  // the most threads a point ran with
    for (const auto& point : bench["points"]) threads = std::max(threads, point["engine"]["threads"].get<int>());
    // bench[SIDE_ceiling] from `measure`, and each point's share of it; a failure is recorded.
    const auto ceiling = [&bench](const std::string& side, const auto& measure) {
      const std::string key = side + "_ceiling";
      try {
        bench[key] = measure();
        if (!bench[key].contains("images_per_second")) return;
        const double rate = bench[key]["images_per_second"]["median"].get<double>();
        for (auto& point : bench["points"]) point[key + "_fraction"] = point["images_per_second"]["median"].get<double>() / rate;
      } catch (const std::exception& error) {
        bench[key] = {{"error", error.what()}};
        spdlog::warn("{} ceiling not measured: {}", side, error.what());
      }
    };
    ceiling("input", [&] { return measure_input_ceiling(pipeline, threads, options.repeat); });
    ceiling("output", [&] {  // the last run's outputs are still in the scratch directory
      const fs::path copies = scratch.path() / "output-ceiling";
      nlohmann::json result = measure_output_ceiling(scratch.path() / "out", copies,
                                                     bench["points"].back()["items"].get<int64_t>(), threads, options.repeat);
      fs::remove_all(copies);
      return result;
    });
  }
  pipeline.input.dir = original_input;
  analyse_scaling(bench);
  return bench;
}

SweepAxis parse_sweep(const std::string& spec) {
  const auto eq = spec.find('=');
  const std::string name = spec.substr(0, eq);
  if (eq == std::string::npos || (name != "threads" && name != "buffers" && name != "streams" && name != "batch" && name != "devices")) {
    throw ConfigError("--sweep " + spec + ": expected NAME=V1,V2,... with NAME threads, buffers, streams, batch or devices");
  }
  SweepAxis axis{name, {}};
  std::stringstream values(spec.substr(eq + 1));
  for (std::string value; std::getline(values, value, ',');) {
    if ((name == "buffers" || name == "batch") && value == "auto") {  // the engine's own choice (0)
      axis.values.push_back(0);
      continue;
    }
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || v < 1 || v > 4096) {
      throw ConfigError("--sweep " + spec + ": '" + value + "' is not a whole number from 1 to 4096" +
                        (name == "buffers" || name == "batch" ? " or auto" : ""));
    }
    axis.values.push_back(v);
  }
  if (axis.values.empty()) throw ConfigError("--sweep " + spec + ": no values");
  return axis;
}

std::vector<PointParams> expand_grid(const std::vector<SweepAxis>& axes) {
  std::vector<PointParams> grid{{}};
  for (const auto& axis : axes) {
    std::vector<PointParams> next;
    for (const auto& point : grid) {
      for (int value : axis.values) {
        PointParams p = point;
        p[axis.name] = value;
        next.push_back(std::move(p));
      }
    }
    grid = std::move(next);
  }
  return grid;
}

std::string point_label(const PointParams& params) {
  std::string label;
  for (const auto& [name, value] : params) {
    label += (label.empty() ? "" : " ") + name + "=" + ((name == "buffers" || name == "batch") && value == 0 ? "auto" : std::to_string(value));
  }
  return label.empty() ? "default" : label;
}

}  // namespace imflow::bench
