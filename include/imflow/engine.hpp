// Running a pipeline over a directory: the oneTBB flow graph (source -> reader -> process ->
// writer) with a bounded pool of work items, and the run summary it returns.
#pragma once
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "imflow/pipeline.hpp"
#include "imflow/summary.hpp"

namespace imflow {

// What a run has done so far, for a caller watching from another thread (imflow.run's progress
// bar); the engine only writes the counts and only reads `stop`.
struct RunCounts {
  std::atomic<int64_t> files{-1};  // input files listed (-1 until the list is made)
  std::atomic<int64_t> files_done{0}, items_done{0}, items_failed{0};
  std::atomic<bool> stop{false};   // RunOptions::stop when the caller sets no other
};

struct RunOptions {
  bool progress = false;                   // draw a progress line on stderr (a terminal)
  std::filesystem::path trace_path;        // Chrome trace JSON, empty for none
  std::filesystem::path summary_path;      // default: <output>/summary.json
  const std::atomic<bool>* stop = nullptr; // set to stop taking new items (signals)
  bool resume = false;                     // skip items OUT/manifest.jsonl records as done and still valid
  // MPI: the next input file index for this process (nullopt: none left); empty: all files in order.
  std::function<std::optional<int64_t>()> file_feed;
  bool write_summary = true;               // false: the caller merges and writes it (MPI rank 0)
  std::string manifest_name = "manifest.jsonl";
  RunCounts* counts = nullptr;             // updated as items finish (and its stop read), or none
};

// Run the pipeline; per-item failures are recorded in the summary, not thrown. Throws for
// errors that stop the whole run (no input directory, no usable device, ...).
RunSummary run_pipeline(const Pipeline& pipeline, const RunOptions& options);

// Files under the input directory matching the patterns, sorted; the input may also be one file.
std::vector<std::filesystem::path> list_input_files(const InputConfig& input);

// Usable CUDA devices (0 without a driver, a device, or CUDA support in this build).
int cuda_device_count();

// Resolve device "auto" to "cpu" or "cuda" (with a warning when no GPU); "cuda" without a GPU throws.
std::string resolve_device(const std::string& requested);

}  // namespace imflow
