// `imflow bench PIPELINE --sweep threads=1,2,4 ...`: options, the sweep, bench.json/bench.csv.
#include "cli/bench_command.hpp"

#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>

#include "bench/machine.hpp"
#include "bench/report.hpp"
#include "bench/sweep.hpp"
#include "cli/option_checks.hpp"
#include "imflow/cli.hpp"
#include "imflow/engine.hpp"
#include "imflow/io/atomic_file.hpp"

namespace imflow {

namespace {
std::atomic<bool> g_bench_stop{false};
extern "C" void on_bench_signal(int) { g_bench_stop = true; }
}  // namespace

struct BenchCommand::Args {
  std::string pipeline, input, device;
  std::vector<std::string> sweeps;
  int threads = -1, buffers = -1, streams = -1, buffers_per_stream = -1;
  bench::BenchOptions options;
};

BenchCommand::BenchCommand(CLI::App& app, int argc, char** argv) : args_(std::make_unique<Args>()) {
  for (int i = 0; i < argc; ++i) args_->options.command_line += (i ? " " : "") + std::string(argv[i]);
  Args& a = *args_;
  command_ = app.add_subcommand("bench", "measure throughput over a sweep of engine settings (bench.json, bench.csv)");
  command_->add_option("pipeline", a.pipeline, "pipeline YAML file")->required()->check(CLI::ExistingFile);
  command_->add_option("--sweep", a.sweeps, "NAME=V1,V2,... with NAME threads, buffers (CPU: buffers; CUDA: "
                                            "buffers per stream), streams, batch (CUDA, batchable pipelines) or devices; "
                                            "repeatable, every combination runs")
      ->allow_extra_args(false);  // one value per --sweep, so a following positional is not taken
  command_->add_option("--repeat,-r", a.options.repeat, "timed repeats per point (median, min, max)")
      ->check(cli::whole_number_in(1, 1000))->capture_default_str();
  command_->add_option("--warmup", a.options.warmup, "untimed warm-up runs per point")
      ->check(cli::whole_number_in(0, 100))->capture_default_str();
  command_->add_option("--images,-n", a.options.images, "run on N input files made by cycling the input's files (hard links)")
      ->check(cli::whole_number_in(int64_t{1}, int64_t{100000000}));
  command_->add_flag("--gustafson", a.options.gustafson,
                     "scaled size: N = base x workers input files (base: --images or the input's file count)");
  command_->add_option("--out,--output,-o", a.options.out_dir, "where bench.json, bench.csv and traces go")
      ->check(cli::kNotEmpty)->capture_default_str();
  command_->add_option("--input,-i", a.input, "input directory (or one file); overrides input.dir")->check(cli::kNotEmpty);
  command_->add_option("--device", a.device, "auto | cpu | cuda; overrides device")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  command_->add_option("--threads,-j", a.threads, "threads when not swept (0: all cores)")->check(cli::whole_number_in(0, 4096));
  command_->add_option("--buffers", a.buffers, "CPU buffers when not swept")->check(cli::whole_number_in(0, 4096));
  command_->add_option("--streams", a.streams, "CUDA streams when not swept")->check(cli::whole_number_in(1, 64));
  command_->add_option("--buffers-per-stream", a.buffers_per_stream, "CUDA buffers per stream when not swept (0: chosen per run)")
      ->check(cli::whole_number_in(0, kMaxBuffersPerStream));
  command_->add_flag("--trace", a.options.trace, "write OUT/traces/point-K.trace.json from each point's last warm-up");
  command_->add_flag("--ceiling", a.options.ceiling,
                     "after the points, time reading the inputs (and copying them to the GPU) with no steps, and "
                     "writing the last run's output files again with no formatting: the most any pipeline could "
                     "reach here on each side, and each point's share of it");
  command_->footer("Exit codes: 0 every point ran without failed items; 1 bad command line or pipeline; 2 a point had "
                   "failed items or errors (named); 3 the bench could not start; 130 interrupted.");
}

BenchCommand::~BenchCommand() = default;

bool BenchCommand::parsed() const { return command_->parsed(); }

int BenchCommand::run(bool verbose) {
  Args& a = *args_;
  a.options.verbose = verbose;
  for (const auto& spec : a.sweeps) a.options.axes.push_back(bench::parse_sweep(spec));
  Pipeline pipeline = load_pipeline(a.pipeline);
  if (!a.input.empty()) pipeline.input.dir = a.input;
  if (!a.device.empty()) pipeline.engine.device = a.device;
  if (a.threads >= 0) pipeline.engine.threads = a.threads;
  if (a.buffers >= 0) pipeline.engine.buffers = a.buffers;
  if (a.streams >= 0) pipeline.engine.streams = a.streams;
  if (a.buffers_per_stream >= 0) pipeline.engine.buffers_per_stream = a.buffers_per_stream;
  validate_engine(pipeline.engine);
  pipeline.engine.device = resolve_device(pipeline.engine.device);
  const std::string input = pipeline.input.dir.string();

  nlohmann::json bench = {{"imflow_version", bench::machine_info()["imflow_version"]},
                          {"date", bench::utc_now()},
                          {"command_line", a.options.command_line},
                          {"machine", bench::machine_info()},
                          {"pipeline", a.pipeline},
                          {"input", input},
                          {"device", pipeline.engine.device},
                          {"images", a.options.images},
                          {"repeat", a.options.repeat},
                          {"warmup", a.options.warmup}};
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& step : pipeline.steps) steps.push_back(step->name());
  bench["steps"] = steps;

  std::signal(SIGINT, on_bench_signal);
  std::signal(SIGTERM, on_bench_signal);
  bench.update(bench::run_sweep(pipeline, a.options, &g_bench_stop));
  bench["machine_at_end"] = {{"load_average_1m", bench::machine_info()["load_average_1m"]}};
  write_text_atomic(a.options.out_dir / "bench.json", bench.dump(2) + "\n");
  bench::write_csv(bench, a.options.out_dir / "bench.csv");
  std::cout << bench::format_report(bench);
  spdlog::info("bench.json and bench.csv in {}", a.options.out_dir.string());
  if (g_bench_stop) return kExitInterrupted;
  if (bench["status"] != "ok") {
    spdlog::error("bench failed: {}", bench.value("error", std::string("unknown error")));
    return kExitSomeFailed;
  }
  return kExitOk;
}

}  // namespace imflow
