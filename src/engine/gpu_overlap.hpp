// GPU timeline accounting: per-device epoch events that map CUDA event times onto the trace's
// clock, the copy and kernel intervals of every item, and how much copy time overlapped kernels.
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/resources.hpp"
#include "imflow/pipeline.hpp"
#include "imflow/trace.hpp"

namespace imflow {

struct GpuSlot;

struct GpuInterval {
  enum Kind { copy_in, compute, copy_out } kind;
  double start_us, end_us;
};

// One GPU stage of an item or a batch (h2d, a step, d2h) on the trace's clock.
struct StageSpan {
  std::string name;
  GpuInterval::Kind kind;
  double start_us, end_us;
};

class GpuTimeline {
 public:
  // `devices`: the CUDA device numbers in use.
  explicit GpuTimeline(std::vector<int> devices);
  // Record and wait for an epoch event on every device (once, before the run).
  void start(const std::vector<std::unique_ptr<GpuSlot>>& slots, const Trace* trace);
  const cuda::Event& epoch(int device) const { return epochs_[slot_of(device)]; }
  double epoch_us(int device) const { return epoch_us_[slot_of(device)]; }
  void add(int device, GpuInterval interval);
  // The stages of the work a slot just finished on `device`, from its events (marks[0] before
  // the upload, marks[1] after it, marks[2 + s] after step s, the last after the download), each
  // also added to the device's intervals.
  std::vector<StageSpan> add_stages(int device, const std::vector<cuda::Event>& marks,
                                    const std::vector<std::string>& step_names);
  // One item finished on `device` (for the per-device figures).
  void count_item(int device, int64_t bytes);
  // Busy time per kind and per device, and the fraction of H2D / D2H time during which some
  // kernel of the same device was running.
  nlohmann::json summary(const std::vector<std::unique_ptr<GpuSlot>>& slots) const;

 private:
  size_t slot_of(int device) const;
  std::vector<int> devices_;
  std::vector<cuda::Event> epochs_;
  std::vector<int64_t> items_, bytes_;
  std::vector<double> epoch_us_;
  mutable std::mutex mutex_;
  std::vector<std::vector<GpuInterval>> intervals_;
};

// The names of the pipeline's steps, in order (the compute stages of add_stages).
std::vector<std::string> step_names(const Pipeline& pipeline);

// Length of the part of [start, end) covered by the union `merged` (sorted, disjoint).
double covered_length(const std::vector<std::pair<double, double>>& merged, double start, double end);
// Sorted, disjoint union of intervals.
std::vector<std::pair<double, double>> merge_intervals(std::vector<std::pair<double, double>> intervals);

}  // namespace imflow
