// The host stages every backend shares: reading an item, running steps on the CPU, and
// finishing it (outputs, summary record, error line, progress). Each records its time.
#pragma once
#include <atomic>
#include <exception>
#include <filesystem>
#include <mutex>
#include <string>

#include "imflow/pipeline.hpp"
#include "imflow/summary.hpp"
#include "imflow/trace.hpp"
#include "imflow/work_item.hpp"
#include "progress.hpp"

namespace imflow {

class Manifest;
class MergedCatalogStream;
class TileRun;

struct RunContext {
  RunContext(const Pipeline& pipeline_, RunSummary& summary_, Progress* progress_, Trace* trace_,
             const std::atomic<bool>* stop_)
      : pipeline(pipeline_), summary(summary_), progress(progress_), trace(trace_), stop(stop_) {}

  const Pipeline& pipeline;
  RunSummary& summary;
  Progress* progress = nullptr;           // null when not reporting
  Trace* trace = nullptr;                 // null when not tracing
  const std::atomic<bool>* stop = nullptr;  // external stop request (signals)
  std::atomic<bool> halt{false};  // set by fail-fast or a fatal error
  Manifest* manifest = nullptr;   // OUT/manifest.jsonl, null when not kept
  TileRun* tiles = nullptr;       // large images as tiles (docs/tiling.md), null when not tiling
  MergedCatalogStream* merged_catalog = nullptr;  // OUT/catalog.csv made during the run, or null
  // Whole float32 FITS images are read without their byte swap, which the device does after the
  // upload (set by the CUDA item graph where no host stage reads the pixels).
  bool float32_swap_on_device = false;

  bool stopping() const { return halt.load() || (stop != nullptr && stop->load()); }
  // Stop taking new items because of a fatal error; the first reason given is kept.
  void halt_with(const std::string& reason) { halt_keeping_first(fatal_error, reason); }
  std::string fatal_reason() const { return kept(fatal_error); }
  // fail_fast: stop taking new items after `item` failed (the first such item is kept).
  void halt_after_failure(const std::string& item) { halt_keeping_first(failed_first, item); }
  std::string first_failure() const { return kept(failed_first); }

 private:
  void halt_keeping_first(std::string& slot, const std::string& value) {
    std::lock_guard lock(fatal_mutex);
    if (slot.empty()) slot = value;
    halt = true;
  }
  std::string kept(const std::string& slot) const {
    std::lock_guard lock(fatal_mutex);
    return slot;
  }
  mutable std::mutex fatal_mutex;
  std::string fatal_error;   // why the run halted (device errors, ...)
  std::string failed_first;  // fail_fast: the item whose failure stopped the run
};

// Measures one stage of one item: adds its time to the item and (if tracing) to the trace.
class StageTimer {
 public:
  StageTimer(RunContext& run, WorkItem& item, std::string stage, std::string track);
  ~StageTimer();
  void discard() { recorded_ = false; }  // the interval is neither timed nor traced

 private:
  RunContext& run_;
  WorkItem& item_;
  std::string stage_, track_;
  Trace::Clock::time_point start_;
  double cpu_start_us_ = 0.0;  // traced runs only
  bool recorded_ = true;
  TraceStage parts_;  // TraceParts inside the stage nest under it in the trace
};

// Reset `item` for `ref` and read its pixels; failures are recorded in the item.
void read_stage(RunContext& run, WorkItem& item, ItemRef ref);
// Run every step on the CPU, each timed; failures are recorded in the item.
void cpu_process_stage(RunContext& run, WorkItem& item);
// Write outputs, log errors, record the summary and progress; sets run.halt for fail-fast.
void finish_stage(RunContext& run, WorkItem& item);

// Why no further output can be written (read-only or (nearly) full file system under `dir`), or "".
std::string output_device_problem(const std::filesystem::path& dir);

// "file[hdu H][plane P]": how an item is named in messages.
std::string item_name(const ItemRef& ref);

// "step NAME: reason" for what step NAME threw ("out of memory" for std::bad_alloc): how every
// path, CPU or GPU, words a step's failure after the item's name. A reason that starts with
// `file` (the item's own, e.g. a header keyword's error) loses that prefix: the name says it.
std::string step_failure(const std::string& step, const std::exception& error, const std::filesystem::path& file = {});

// A track name for the calling worker thread, e.g. "read #3".
std::string worker_track(const std::string& stage);

}  // namespace imflow
