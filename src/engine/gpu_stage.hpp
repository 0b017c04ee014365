// The GPU stage of both CUDA graphs, for a unit of work that is one item (gpu_graph.cpp) or a
// batch of same-shape items (gpu_batch_graph.cpp). Units wait in a queue; a reserving join pairs
// each with a free slot (a stream with its device buffers: the stage's tokens); an async_node
// enqueues the unit on the slot's stream and returns at once; the stream callback hands it to
// collect, which takes the results into the items, frees the slot and sends the items on. So no
// TBB worker waits on the device (but inside a library call that synchronizes: cuSOLVER's batched
// SVD, docs/architecture.md), and N slots are N units in flight. cudaStreamAddCallback (not
// cudaLaunchHostFunc) is used because it is also called when the stream failed, so the graph can
// always account for the unit and never hangs.
#pragma once
#include <cuda_runtime_api.h>
#include <tbb/flow_graph.h>

#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "gpu_slot.hpp"
#include "imflow/work_item.hpp"
#include "stages.hpp"

namespace imflow {

// The units: one item, or a batch of same-shape items; items_of lists a unit's items in order.
using ItemBatch = std::vector<WorkItem*>;
using BatchPtr = std::shared_ptr<ItemBatch>;
inline std::span<WorkItem* const> items_of(WorkItem* const& item) { return {&item, 1}; }
inline std::span<WorkItem* const> items_of(const BatchPtr& batch) { return *batch; }

// What the stage does with a unit, on the slot the unit holds.
template <typename Unit>
struct GpuStageChoices {
  // In the GPU node, first: true to hand the unit straight on without enqueueing it (its items
  // failed, the run halted, or it was processed synchronously here). Fails the items it skips.
  std::function<bool(GpuSlot&, const Unit&)> hand_on_now;
  // Queue the unit's copies and kernels on the slot's stream; waits only inside library calls
  // that synchronize.
  std::function<void(GpuSlot&, const Unit&)> enqueue;
  // `enqueue` threw (the stream has been drained since): fail the items. `code` is the exception's
  // CUDA error, or what the drained stream reported.
  std::function<void(GpuSlot&, const Unit&, const std::string& what, cudaError_t code)> fail;
  // The stream of an enqueued unit completed with `status`: its results, or the failure, into the items.
  std::function<void(GpuSlot&, const Unit&, cudaError_t status)> collect;
};

template <typename Unit>
class GpuStage {
 public:
  GpuStage(tbb::flow::graph& graph, int threads, const std::vector<std::unique_ptr<GpuSlot>>& slots,
           GpuStageChoices<Unit> choices)
      : choices_(std::move(choices)),
        units_(graph),
        free_lanes_(graph),
        pair_(graph),
        gpu_(graph, tbb::flow::unlimited, [this](const Work& work, Gateway& gateway) { submit(work, gateway); },
             kGpuNodePriority),
        collect_(graph, threads, [this](Lane* lane, typename CollectNode::output_ports_type& ports) {
          collect_unit(*lane, std::get<0>(ports));
        }, kGpuNodePriority) {
    for (const auto& slot : slots) lanes_.push_back(Lane{slot.get()});
    tbb::flow::make_edge(units_, tbb::flow::input_port<0>(pair_));
    tbb::flow::make_edge(free_lanes_, tbb::flow::input_port<1>(pair_));
    tbb::flow::make_edge(pair_, gpu_);
    tbb::flow::make_edge(gpu_, collect_);
  }

  // Where units go in, and where their items come out once collected (or failed).
  tbb::flow::receiver<Unit>& units() { return units_; }
  tbb::flow::sender<WorkItem*>& items() { return tbb::flow::output_port<0>(collect_); }

  // Put the slots into circulation (before the graph's source starts).
  void start() {
    for (Lane& lane : lanes_) free_lanes_.try_put(&lane);
  }

 private:
  struct Lane;
  using Work = std::tuple<Unit, Lane*>;
  using GpuNode = tbb::flow::async_node<Work, Lane*>;
  using Gateway = typename GpuNode::gateway_type;
  using CollectNode = tbb::flow::multifunction_node<Lane*, std::tuple<WorkItem*>>;
  using ItemsOut = std::tuple_element_t<0, typename CollectNode::output_ports_type>;

  // A slot and the unit it holds: the token of the stage.
  struct Lane {
    GpuSlot* slot;
    Unit unit{};
    Gateway* gateway = nullptr;        // the GPU node's gateway, for the stream callback
    cudaError_t status = cudaSuccess;  // what the stream reported at completion
    bool on_stream = false;            // the unit was enqueued and its callback added
  };

  // The GPU node's body: holds the graph open (reserve_wait) until the stream callback hands the
  // unit on. When `enqueue` throws, nothing will call back, so the stream is drained before the
  // unit is failed and handed on.
  void submit(const Work& work, Gateway& gateway) {
    const auto& [unit, lane] = work;
    GpuSlot& slot = *lane->slot;
    lane->unit = unit;
    lane->status = cudaSuccess;
    lane->on_stream = false;
    const bool now = choices_.hand_on_now(slot, unit);
    gateway.reserve_wait();
    if (now) {
      gateway.try_put(lane);
      gateway.release_wait();
      return;
    }
    lane->gateway = &gateway;
    try {
      choices_.enqueue(slot, unit);
      lane->on_stream = true;
      IMFLOW_CUDA_CHECK(cudaStreamAddCallback(slot.stream, &GpuStage::on_stream_done, lane, 0));
    } catch (const std::exception& error) {
      lane->on_stream = false;
      const cudaError_t code = cudaStreamSynchronize(slot.stream);
      const auto* cuda_error = dynamic_cast<const cuda::CudaError*>(&error);
      choices_.fail(slot, unit, error.what(), cuda_error ? cuda_error->code() : code);
      gateway.try_put(lane);
      gateway.release_wait();
    }
  }

  static void CUDART_CB on_stream_done(cudaStream_t, cudaError_t status, void* user_data) {
    auto* lane = static_cast<Lane*>(user_data);
    lane->status = status;
    Gateway* gateway = lane->gateway;
    gateway->try_put(lane);
    gateway->release_wait();
  }

  // The collect node's body: results (of an enqueued unit) into the items, the slot back to the
  // free ones, then the items on; a slot with work after its items (GpuSlot::after_hand_on) is
  // freed once that is done.
  void collect_unit(Lane& lane, ItemsOut& out) {
    const Unit unit = std::exchange(lane.unit, Unit{});
    if (lane.on_stream) choices_.collect(*lane.slot, unit, lane.status);
    const std::function<void()> after = std::exchange(lane.slot->after_hand_on, nullptr);
    if (!after) free_lanes_.try_put(&lane);
    for (WorkItem* item : items_of(unit)) out.try_put(item);
    if (after) {
      after();
      free_lanes_.try_put(&lane);
    }
  }

  GpuStageChoices<Unit> choices_;
  std::vector<Lane> lanes_;  // filled once, before any token circulates (pointers stay valid)
  tbb::flow::queue_node<Unit> units_;
  tbb::flow::buffer_node<Lane*> free_lanes_;
  tbb::flow::join_node<Work, tbb::flow::reserving> pair_;
  GpuNode gpu_;
  CollectNode collect_;
};

// A step's own failure while it was enqueued (its input does not suit it, e.g. a rank above the
// slice's size), not the device's: "step NAME: reason", worded as the CPU path words it.
class StepFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs `enqueue` (one step's work on the device); a failure other than a CUDA error comes out as
// a StepFailure naming the step (step_failure: without `file`'s name, which the item's says).
template <typename Enqueue>
void enqueue_step(const std::string& step, Enqueue&& enqueue, const std::filesystem::path& file = {}) {
  try {
    enqueue();
  } catch (const cuda::CudaError&) {
    throw;
  } catch (const StepFailure&) {
    throw;
  } catch (const std::exception& error) {
    throw StepFailure(step_failure(step, error, file));
  }
}

// "CUDA error <name>: <description>", for a stream that completed with `status`.
inline std::string cuda_error_text(cudaError_t status) {
  return std::string("CUDA error ") + cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
}

// An item's failure on `device`: "GPU N: what" for a CUDA error; a step's own failure (code
// cudaSuccess) reads as it does on the CPU, without the device.
inline std::string device_failure(int device, const std::string& what, cudaError_t code) {
  return code == cudaSuccess ? what : "GPU " + std::to_string(device) + ": " + what;
}

// After a failure on `device`: a sticky CUDA error (the device is unusable) halts the run.
inline void halt_if_sticky(RunContext& run, int device, const std::string& what, cudaError_t code) {
  if (cuda::is_sticky(code)) {
    run.halt_with("device " + std::to_string(device) + " is in an unrecoverable state (" + what +
                  "); stopping, finished items are kept");
  }
}

}  // namespace imflow
