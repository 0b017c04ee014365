// The step interface: one processing operation with a CPU and (optionally) a CUDA implementation,
// built from validated YAML parameters. Steps are registered in src/steps/registry.cpp.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>
#include <vector>

#include "imflow/work_item.hpp"

namespace imflow {

class ParamReader;
struct GpuContext;  // defined by the CUDA engine (cuda/gpu_context.hpp)
struct GpuBatch;    // same-shape items on one stream (cuda/gpu_batch.hpp)

class Step {
 public:
  virtual ~Step() = default;

  // Process one item on the host.
  virtual void run_cpu(WorkItem& item) const = 0;

  // Whether run_cuda is implemented (and compiled in).
  virtual bool has_cuda() const { return false; }
  // Enqueue the step on the item's stream; device buffers live in `gpu`. Must not synchronize.
  virtual void run_cuda(WorkItem& item, GpuContext& gpu) const;

  // Host work a GPU step needs before its item is uploaded (the CUDA graph's reader calls it,
  // after read, on a host thread; e.g. the CPU SVD of svd_reconstruct's hybrid mode). When a
  // step says needs_host_phase(), the CUDA graph runs the steps before it with run_cpu on the
  // reader thread, then its prepare_host, and the GPU runs it (run_cuda) and the steps after it.
  virtual bool needs_host_phase() const { return false; }
  virtual void prepare_host(WorkItem&) const {}

  // Batches (engine option `batch`): the CUDA graph hands up to `batch` same-shape items to one
  // slot at once when every step of the pipeline says has_cuda_batch(). run_cuda_batch enqueues
  // the step for all of them on the batch's stream; must not synchronize.
  virtual bool has_cuda_batch() const { return false; }
  virtual void run_cuda_batch(WorkItem* const* items, int count, GpuBatch& batch) const;

  // Whether the step's GPU code calls cuBLAS or cuSOLVER: the CUDA engine then opens them
  // (cuda/linear_algebra.hpp) on a thread of their own while it sets up the devices.
  virtual bool uses_gpu_linear_algebra() const { return false; }

  // CUDA runs, once before the graph starts, for steps that say chooses_on_device(): time the
  // step's options on `sample` (the first input item, the steps before this one already run on
  // the CPU) with `gpu` (an idle slot), fix the choice, and describe it for the summary.
  // `batch_state` is that slot's batch buffers: a batched trial makes them there (or uses them),
  // so the slot's first batch finds them ready.
  virtual bool chooses_on_device() const { return false; }
  virtual nlohmann::json choose_on_device(WorkItem& sample, GpuContext& gpu, std::unique_ptr<GpuBatch>& batch_state,
                                          int host_threads, int batch) const;

  // Called once when the pipeline is loaded, with the steps before this one in order: a step
  // that depends on how an earlier one is set up checks it here (e.g. deblend needs label's
  // connectivity 8) and may keep what it needs. Returns "" or why the pipeline is invalid
  // (reported as a configuration error at this step's entry).
  virtual std::string link(const std::vector<const Step*>& earlier);

  const std::string& name() const { return name_; }
  // The parameters with every default filled in, as `imflow validate` prints them.
  const YAML::Node& params() const { return params_; }
  // One of them as text (a scalar's), else `fallback`.
  std::string param_text(const char* key, const std::string& fallback) const;

 private:
  friend std::unique_ptr<Step> make_step(const std::string&, ParamReader&);
  std::string name_;
  YAML::Node params_;
};

using StepFactory = std::unique_ptr<Step> (*)(ParamReader& params);

// What the registry knows of a step: its name, a one-line summary, and what it needs from the
// steps before it and provides to those after (e.g. "background", "labels", "catalog").
struct StepInfo {
  const char* name;
  const char* summary;
  StepFactory make;
  std::vector<std::string> needs;
  std::vector<std::string> provides;
};

// Every registered step, in registration order.
const std::vector<StepInfo>& step_registry();
const StepInfo* find_step(const std::string& name);

// Build a step from its parameters; unknown parameters are errors (ParamReader::finish).
std::unique_ptr<Step> make_step(const std::string& name, ParamReader& params);

}  // namespace imflow
