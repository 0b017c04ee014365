// The batch-mode CUDA graph (gpu_batch_graph.hpp):
//   reader -> batcher (serial: groups same-shape items; failed items go straight on)
//          -> GPU stage (gpu_stage.hpp) with batches as its unit: one upload, each step's
//             run_cuda_batch, one download on the slot's stream; per-item results, a failure
//             stays with its item -> writer.
// A batch that is not full is flushed by the main thread when graph.wait_for_all() returns:
// the graph only goes idle when no more items can arrive (input done, or every token waiting in
// the batcher), so the flush is never a guess and never a timeout.
#include "gpu_batch_graph.hpp"

#include <spdlog/spdlog.h>
#include <tbb/flow_graph.h>

#include <memory>
#include <string>
#include <tuple>

#include "cuda/cuda_check.hpp"
#include "gpu_stage.hpp"
#include "graph_ends.hpp"
#include "items_in_flight.hpp"

namespace imflow {

namespace flow = tbb::flow;

bool batchable_pipeline(const Pipeline& pipeline, const EngineConfig& engine) {
  if (engine.batch <= 1 || pipeline.steps.empty()) return false;
  for (const auto& step : pipeline.steps) {
    if (!step->has_cuda_batch()) return false;
  }
  return true;
}

namespace {

// Groups items of one shape; touched by the serial batcher node, and by the main thread only
// while the graph is idle.
class Batcher {
 public:
  explicit Batcher(int size) : size_(size) {}
  // Add `item`; returns the batches now complete (the previous one when the shape changed).
  std::vector<BatchPtr> add(WorkItem* item) {
    std::vector<BatchPtr> ready;
    if (current_ && !current_->empty()) {
      const WorkItem* first = current_->front();
      if (first->pixels.width() != item->pixels.width() || first->pixels.height() != item->pixels.height()) {
        ready.push_back(std::move(current_));
      }
    }
    if (!current_) {
      current_ = std::make_shared<ItemBatch>();
      current_->reserve(static_cast<size_t>(size_));
    }
    current_->push_back(item);
    if (static_cast<int>(current_->size()) >= size_) ready.push_back(std::move(current_));
    return ready;
  }
  // The partial batch, if any.
  BatchPtr flush() {
    if (current_ && current_->empty()) current_.reset();
    return std::move(current_);
  }

 private:
  int size_;
  BatchPtr current_;
};

void enqueue_batch(RunContext& run, GpuSlot& slot, ItemBatch& items) {
  cuda::DeviceGuard guard(slot.device);
  if (!slot.batch) slot.batch = std::make_unique<GpuBatch>(slot.device, slot.stream.get());
  GpuBatch& batch = *slot.batch;
  const int count = static_cast<int>(items.size());
  slot.marks[0].record(slot.stream);
  cuda::enqueue_batch_upload(batch, items.data(), count);
  slot.marks[1].record(slot.stream);
  const auto& steps = run.pipeline.steps;
  for (size_t s = 0; s < steps.size(); ++s) {
    enqueue_step(steps[s]->name(), [&] { steps[s]->run_cuda_batch(items.data(), count, batch); });
    slot.marks[2 + s].record(slot.stream);
  }
  cuda::enqueue_batch_download(batch, items.data(), count);
  slot.marks[2 + steps.size()].record(slot.stream);
}

// Stage times of the batch (each item gets its share, so summed busy times stay right; the
// trace and the overlap accounting get the batch once), then each item's results.
void collect_batch(RunContext& run, GpuSlot& slot, ItemBatch& items, GpuTimeline& timeline) {
  cuda::DeviceGuard guard(slot.device);
  const double share = 1.0 / static_cast<double>(items.size());
  for (const StageSpan& stage : timeline.add_stages(slot.device, slot.marks, step_names(run.pipeline))) {
    for (WorkItem* item : items) item->times.push_back({stage.name, (stage.end_us - stage.start_us) * 1e-6 * share});
    if (run.trace != nullptr) {
      run.trace->add(slot.track, stage.name, stage.start_us, stage.end_us - stage.start_us,
                     "{\"items\":" + std::to_string(items.size()) + ",\"first_item\":" +
                         std::to_string(items.front()->ref.index) + "}");
    }
  }
  for (size_t b = 0; b < items.size(); ++b) {
    WorkItem& item = *items[b];
    try {
      cuda::collect_batch_item(*slot.batch, static_cast<int>(b), item);
    } catch (const std::exception& error) {
      item.fail(item_name(item.ref) + ": " + error.what());
    }
    timeline.count_item(slot.device, item.input_bytes);
  }
}

void fail_batch(RunContext& run, ItemBatch& items, GpuSlot& slot, const std::string& what, cudaError_t code) {
  const std::string reason = device_failure(slot.device, what, code);
  for (WorkItem* item : items) {
    if (item->status != ItemStatus::failed) item->fail(item_name(item->ref) + ": " + reason);
  }
  halt_if_sticky(run, slot.device, what, code);
}

}  // namespace

void run_gpu_batch_graph(RunContext& run, ItemSource& source, int threads, const EngineConfig& engine,
                         std::vector<std::unique_ptr<GpuSlot>>& slots, GpuTimeline& timeline) {
  const int batch_size = engine.batch;
  const ItemsInFlight pool = gpu_batch_items(batch_size, static_cast<int>(slots.size()), threads);
  const auto tokens = static_cast<size_t>(pool.items);
  spdlog::info("GPU batches of same-shape items: {} slots, {} work items ({})", slots.size(), tokens, pool.reason);
  run.summary.set("gpu_tokens", pool.to_json());

  flow::graph graph;
  GraphEnds ends(graph, run, source, threads);
  Batcher batcher(batch_size);
  using BatcherNode = flow::multifunction_node<WorkItem*, std::tuple<BatchPtr, WorkItem*>>;
  BatcherNode batch_items(graph, flow::serial, [&](WorkItem* item, BatcherNode::output_ports_type& ports) {
    if (item->status == ItemStatus::failed) {
      std::get<1>(ports).try_put(item);
      return;
    }
    for (BatchPtr& ready : batcher.add(item)) std::get<0>(ports).try_put(std::move(ready));
  }, kGpuNodePriority);
  GpuStageChoices<BatchPtr> choices;
  choices.hand_on_now = [&](GpuSlot&, const BatchPtr& batch) {
    const bool skip = run.halt.load();  // read once: the items are failed exactly when skipped
    if (skip) {
      for (WorkItem* item : *batch) {
        if (item->status != ItemStatus::failed) item->fail(item_name(item->ref) + ": not processed: " + run.fatal_reason());
      }
    }
    return skip;
  };
  choices.enqueue = [&](GpuSlot& slot, const BatchPtr& batch) { enqueue_batch(run, slot, *batch); };
  choices.fail = [&](GpuSlot& slot, const BatchPtr& batch, const std::string& what, cudaError_t code) {
    fail_batch(run, *batch, slot, what, code);
  };
  choices.collect = [&](GpuSlot& slot, const BatchPtr& batch, cudaError_t status) {
    if (status != cudaSuccess) {
      fail_batch(run, *batch, slot, cuda_error_text(status), status);
      return;
    }
    try {
      collect_batch(run, slot, *batch, timeline);
    } catch (const cuda::CudaError& error) {
      fail_batch(run, *batch, slot, error.what(), error.code());
    }
  };
  GpuStage<BatchPtr> gpu(graph, threads, slots, std::move(choices));
  flow::make_edge(ends.read_items(), batch_items);
  flow::make_edge(flow::output_port<0>(batch_items), gpu.units());
  flow::make_edge(flow::output_port<1>(batch_items), ends.writer());
  flow::make_edge(gpu.items(), ends.writer());
  gpu.start();
  ends.start(tokens, cuda::pinned_allocator());
  graph.wait_for_all();
  // Idle: the input is done (or every token waits in the batcher); send the partial batch.
  while (BatchPtr rest = batcher.flush()) {
    gpu.units().try_put(std::move(rest));
    graph.wait_for_all();
  }
}

}  // namespace imflow
