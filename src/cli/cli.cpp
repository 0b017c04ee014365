// The imflow CLI (CLI11): global options, subcommands and exit codes.
#include "imflow/cli.hpp"

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>

#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/step.hpp"
#include "imflow/tiling.hpp"
#include "imflow/version.hpp"
#ifdef IMFLOW_HAVE_MPI
#include "mpi/mpi_run.hpp"
#endif
#include "cli/bench_command.hpp"
#include "cli/option_checks.hpp"
#include "config/input_companions.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/pinned_allocator.hpp"
#endif

namespace imflow {

namespace {
std::atomic<bool> g_stop_requested{false};

// First SIGINT/SIGTERM: stop taking new items, finish those in flight. Second: abort at once
// (exit 130); outputs are atomic, so no half-written file is left under a final name.
extern "C" void on_stop_signal(int) {
  if (g_stop_requested.exchange(true)) _exit(130);
  static const char note[] = "imflow: stopping after the items in flight (again to abort)\n";
  [[maybe_unused]] const auto ignored = ::write(STDERR_FILENO, note, sizeof note - 1);
}

const char* kExitCodes =
    "Exit codes: 0 all items succeeded; 1 bad command line or pipeline file; 2 some items failed;\n"
    "3 the run could not start or was stopped by an error; 130 interrupted (SIGINT/SIGTERM).";

struct RunArgs {
  std::string pipeline;
  std::string input, output, device, devices, trace, summary, detect;
  std::vector<std::string> extnames;
  int threads = -1, buffers = -1, streams = -1, buffers_per_stream = -1;
  int batch = -1;
  int64_t tile = -1, memory_mb = -1;
  bool fail_fast = false;
  bool resume = false;
};

void apply_overrides(Pipeline& pipeline, const RunArgs& args) {
  if (!args.input.empty()) pipeline.input.dir = args.input;
  if (!args.output.empty()) pipeline.output.dir = args.output;
  if (!args.extnames.empty()) pipeline.input.extnames = args.extnames;
  if (!args.detect.empty()) {
    pipeline.input.detect = {"detection image", "", args.detect};
    check_dual_image(pipeline);
  }
  if (!args.device.empty()) pipeline.engine.device = args.device;
  if (args.threads >= 0) pipeline.engine.threads = args.threads;
  if (args.buffers >= 0) pipeline.engine.buffers = args.buffers;
  if (args.memory_mb >= 0) pipeline.engine.memory_mb = args.memory_mb;
  if (!args.devices.empty()) pipeline.engine.devices = parse_device_list(args.devices);
  if (args.streams >= 0) pipeline.engine.streams = args.streams;
  if (args.buffers_per_stream >= 0) pipeline.engine.buffers_per_stream = args.buffers_per_stream;
  if (args.batch >= 0) pipeline.engine.batch = args.batch;
  if (args.fail_fast) pipeline.engine.fail_fast = true;
  if (args.tile >= 0) {
    if (args.tile > 0 && args.tile < 8) throw ConfigError("--tile: must be 0 (no tiling) or at least 8");
    pipeline.tiling.size = args.tile;
    pipeline.tiling.explicit_size = true;
    try {
      plan_tiling(pipeline);
    } catch (const ConfigError& error) {
      throw ConfigError(std::string("--tile: ") + error.what());
    }
  }
  validate_engine(pipeline.engine);
}

// The directory of a --summary or --trace file, made (or found unusable) before any item is read.
void prepare_report_directory(const char* option, const std::string& path) {
  if (path.empty()) return;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!parent.empty()) std::filesystem::create_directories(parent, error);
  if (error) throw OutputError(std::string(option) + " " + path + ": cannot create its directory: " + error.message());
}

void add_engine_options(CLI::App* command, RunArgs& args) {
  command->add_option("pipeline", args.pipeline, "pipeline YAML file")->required()->check(CLI::ExistingFile);
  command->add_option("--input,-i", args.input, "input directory (or one file); overrides input.dir")->check(cli::kNotEmpty);
  command->add_option("--output,-o", args.output, "output directory; overrides output.dir")->check(cli::kNotEmpty);
  command->add_option("--extname", args.extnames, "FITS: only image HDUs with this EXTNAME (repeat or comma-separate, e.g. SCI); overrides input.extnames")
      ->delimiter(',');
  command->add_option("--detect", args.detect,
                      "dual-image mode: detect on the image of the same path under this directory, measure on the input's; "
                      "overrides input.detect");
  command->add_option("--device", args.device, "auto | cpu | cuda; overrides device")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  command->add_option("--threads,-j", args.threads, "worker threads (0: all cores)")->check(cli::whole_number_in(0, 4096));
  command->add_option("--buffers", args.buffers, "CPU work buffers in flight (0: 2 x threads within --memory-mb)")->check(cli::whole_number_in(0, 4096));
  command->add_option("--memory-mb", args.memory_mb, "CPU path: memory for the work items in flight when --buffers is 0")
      ->check(cli::whole_number_in(int64_t{16}, int64_t{1} << 30));
  command->add_option("--devices", args.devices, "CUDA devices: all (default) or a list such as 0,1; overrides devices");
  command->add_option("--streams", args.streams, "CUDA streams per GPU")->check(cli::whole_number_in(1, 64));
  command->add_option("--buffers-per-stream", args.buffers_per_stream, "pinned buffers per stream (0: chosen from the host's threads, the streams and the image size)")
      ->check(cli::whole_number_in(0, kMaxBuffersPerStream));
  command->add_option("--batch", args.batch, "same-shape items per GPU launch for batchable pipelines (1: per item; 0: chosen from the item size)")
      ->check(cli::whole_number_in(0, 4096));
  command->add_option("--tile", args.tile, "tile edge in pixels for large FITS images (0: never tile); overrides tiling.size")
      ->check(cli::whole_number_in(int64_t{0}, int64_t{1} << 30));
}

// CUDA options given for a CPU run are said to do nothing (`bench` says so of its sweeps).
void warn_unused_cuda_options(const Pipeline& pipeline, const RunArgs& args) {
  if (pipeline.engine.device != "cpu") return;
  std::string given;
  for (const auto& [name, set] : {std::pair{"--streams", args.streams >= 0}, {"--buffers-per-stream", args.buffers_per_stream >= 0},
                                  {"--batch", args.batch >= 0}, {"--devices", !args.devices.empty()}}) {
    if (set) given += (given.empty() ? "" : ", ") + std::string(name);
  }
  if (!given.empty()) spdlog::warn("{}: no effect on the CPU backend (device cpu); ignored", given);
}

int command_run(const RunArgs& args, bool progress) {
  Pipeline pipeline = load_pipeline(args.pipeline);
  apply_overrides(pipeline, args);
  warn_unused_cuda_options(pipeline, args);
  prepare_report_directory("--summary", args.summary);
  prepare_report_directory("--trace", args.trace);
  RunOptions options;
  options.progress = progress;
  options.trace_path = args.trace;
  options.summary_path = args.summary;
  options.stop = &g_stop_requested;
  options.resume = args.resume;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
#ifdef IMFLOW_HAVE_MPI
  if (mpi::launched_under_mpi()) {
    const mpi::MpiOutcome outcome = mpi::run_pipeline_mpi(pipeline, options);
    if (g_stop_requested) return kExitInterrupted;
    if (outcome.stopped) return kExitFatal;
    return outcome.failed > 0 ? kExitSomeFailed : kExitOk;
  }
#endif
  const RunSummary summary = run_pipeline(pipeline, options);
  // Items a resumed run skipped count as succeeded but not in images/s (as in summary.json).
  const std::string skipped = summary.skipped() > 0 ? fmt::format(" ({} skipped: done before)", summary.skipped()) : "";
  spdlog::info("{} items: {} succeeded{}, {} failed in {:.3f} s ({:.1f} images/s, {:.1f} MB/s); summary in {}",
               summary.items(), summary.succeeded(), skipped, summary.failed(), summary.wall_seconds(),
               static_cast<double>(summary.succeeded() - summary.skipped()) / std::max(summary.wall_seconds(), 1e-9),
               summary.input_bytes() / 1e6 / std::max(summary.wall_seconds(), 1e-9),
               (args.summary.empty() ? (pipeline.output.dir / "summary.json").string() : args.summary));
  if (g_stop_requested) return kExitInterrupted;
  if (!summary.stop_reason().empty()) return kExitFatal;
  return summary.failed() > 0 ? kExitSomeFailed : kExitOk;
}

int command_validate(const RunArgs& args) {
  Pipeline pipeline = load_pipeline(args.pipeline);
  apply_overrides(pipeline, args);
  YAML::Emitter out;
  out << pipeline.resolved();
  std::cout << "# " << args.pipeline << ": valid\n" << out.c_str() << "\n";
  return kExitOk;
}

int command_steps() {
  for (const StepInfo& info : step_registry()) {
    std::string name = info.name;
    name.resize(std::max<size_t>(name.size() + 2, 14), ' ');
    std::cout << name << info.summary << "\n";
  }
  return kExitOk;
}

void setup_logging(int verbosity, bool quiet) {
  auto logger = spdlog::stderr_color_mt("imflow");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern(isatty(STDERR_FILENO) ? "%^%l%$: %v" : "[%Y-%m-%d %H:%M:%S.%e] %l: %v");
  spdlog::set_level(quiet ? spdlog::level::err : verbosity > 0 ? spdlog::level::debug : spdlog::level::info);
}
}  // namespace

namespace {
// Pinned blocks the process-wide cache kept for reuse go back to the driver before exit, while
// the CUDA runtime is still up (compute-sanitizer's leak check then sees none left).
struct ReleasePinnedCacheAtExit {
  ~ReleasePinnedCacheAtExit() {
#ifdef IMFLOW_HAVE_CUDA
    cuda::pinned_allocator().release_cached();
#endif
  }
};

// The first word that is not an option (imflow's own take no value) when it names no subcommand:
// CLI11 would only say that a subcommand is required.
std::string unknown_subcommand(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.starts_with('-')) continue;
    const auto named = app.get_subcommands([&](const CLI::App* command) { return command->check_name(word); });
    return named.empty() ? word : std::string();
  }
  return {};
}
}  // namespace

int run_cli(int argc, char** argv) {
  const ReleasePinnedCacheAtExit release_pinned_cache;
  CLI::App app{"imflow: streaming batch processor for scientific images (FITS, PNG, NIfTI) on CPU and CUDA"};
  app.footer(kExitCodes);
  app.set_version_flag("--version,-V", std::string("imflow ") + kVersion);
  app.require_subcommand(1);
  int verbosity = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbosity, "more log output (debug)");
  app.add_flag("-q,--quiet", quiet, "errors only, no progress");
  app.fallthrough();  // the subcommands made below take these after their own name too (`imflow run -q ...`)

  RunArgs run_args;
  CLI::App* run = app.add_subcommand("run", "run a pipeline over a directory of images");
  add_engine_options(run, run_args);
  run->add_option("--trace", run_args.trace,
                  "write a Chrome trace (Perfetto) JSON file: every stage and its parts, with thread CPU time "
                  "(tools/trace_parts.py sums it)");
  run->add_option("--summary", run_args.summary, "summary JSON path (default: OUTPUT/summary.json)");
  run->add_flag("--fail-fast", run_args.fail_fast, "stop at the first failed item");
  run->add_flag("--resume", run_args.resume, "skip items OUTPUT/manifest.jsonl lists as done (input unchanged, outputs intact)");
  run->footer(kExitCodes);

  RunArgs validate_args;
  CLI::App* validate = app.add_subcommand("validate", "check a pipeline file and print it with defaults filled in");
  add_engine_options(validate, validate_args);

  CLI::App* steps = app.add_subcommand("steps", "list the available steps");
  BenchCommand bench(app, argc, argv);

  if (const std::string unknown = unknown_subcommand(app, argc, argv); !unknown.empty()) {
    std::cerr << "imflow: unknown subcommand '" << unknown << "' (run, validate, bench or steps; see --help)\n";
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? kExitOk : kExitUsage;
  }
  setup_logging(verbosity, quiet);
  try {
    if (run->parsed()) return command_run(run_args, !quiet && isatty(STDERR_FILENO));
    if (validate->parsed()) return command_validate(validate_args);
    if (steps->parsed()) return command_steps();
    if (bench.parsed()) return bench.run(verbosity > 0);
  } catch (const ConfigError& error) {
    spdlog::error("{}", error.what());
    return kExitUsage;
  } catch (const std::exception& error) {
    spdlog::error("{}", error.what());
    return kExitFatal;
  }
  return kExitUsage;
}

}  // namespace imflow
