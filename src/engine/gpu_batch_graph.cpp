// The batch-mode CUDA graph (gpu_batch_graph.hpp):
//   reader -> batcher (serial: groups same-shape items; failed items go straight on)
//          -> (batch, free slot) -> async GPU stage (upload, steps' run_cuda_batch, download on
//             the slot's stream; completion by stream callback) -> collect (per-item results,
//             a failure stays with its item) -> writer.
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
#include "graph_ends.hpp"

namespace imflow {

namespace flow = tbb::flow;
using ItemBatch = std::vector<WorkItem*>;
using BatchPtr = std::shared_ptr<ItemBatch>;
using BatchWork = std::tuple<BatchPtr, GpuSlot*>;
using BatchNode = flow::async_node<BatchWork, BatchWork>;

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

void CUDART_CB on_batch_done(cudaStream_t, cudaError_t status, void* user_data) {
  auto* slot = static_cast<GpuSlot*>(user_data);
  slot->status = status;
  auto* gateway = static_cast<BatchNode::gateway_type*>(slot->gateway);
  gateway->try_put(BatchWork{slot->batch_items, slot});
  gateway->release_wait();
}

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
    steps[s]->run_cuda_batch(items.data(), count, batch);
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
  for (WorkItem* item : items) {
    if (item->status != ItemStatus::failed) item->fail(item_name(item->ref) + ": GPU " + std::to_string(slot.device) + ": " + what);
  }
  if (cuda::is_sticky(code)) {
    run.halt_with("device " + std::to_string(slot.device) + " is in an unrecoverable state (" + what +
                  "); stopping, finished items are kept");
  }
}

}  // namespace

void run_gpu_batch_graph(RunContext& run, ItemSource& source, int threads, const EngineConfig& engine,
                         std::vector<std::unique_ptr<GpuSlot>>& slots, GpuTimeline& timeline) {
  const int batch_size = engine.batch;
  std::vector<std::unique_ptr<WorkItem>> items;
  const size_t tokens = static_cast<size_t>(batch_size) * (slots.size() + 1) + 2 * static_cast<size_t>(threads);
  for (size_t i = 0; i < tokens; ++i) {
    items.push_back(std::make_unique<WorkItem>());
    items.back()->pixels.set_allocator(cuda::pinned_allocator());
  }
  spdlog::info("GPU batches of up to {} same-shape items, {} slots, {} work items", batch_size, slots.size(), tokens);

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
  flow::queue_node<BatchPtr> batches(graph);
  flow::buffer_node<GpuSlot*> free_slots(graph);
  flow::join_node<BatchWork, flow::reserving> to_gpu(graph);
  BatchNode gpu(graph, flow::unlimited, [&](const BatchWork& work, BatchNode::gateway_type& gateway) {
    auto [batch, slot] = work;
    const bool skip = run.halt.load();  // read once: the items are failed exactly when skipped
    if (skip) {
      for (WorkItem* item : *batch) {
        if (item->status != ItemStatus::failed) item->fail(item_name(item->ref) + ": not processed: " + run.fatal_reason());
      }
    }
    submit_to_stream(
        *slot, work, gateway, on_batch_done, skip,
        [&] {
          slot->batch_items = batch;
          enqueue_batch(run, *slot, *batch);
        },
        [&](const std::string& what, cudaError_t code) {
          fail_batch(run, *batch, *slot, what, code);
          slot->batch_items.reset();  // failed here: collect only hands the items on
        });
  }, kGpuNodePriority);
  using CollectNode = flow::multifunction_node<BatchWork, std::tuple<WorkItem*>>;
  CollectNode collect(graph, threads, [&](const BatchWork& work, CollectNode::output_ports_type& ports) {
    auto [batch, slot] = work;
    const bool enqueued = slot->batch_items == batch;
    if (enqueued && slot->status != cudaSuccess) {
      fail_batch(run, *batch, *slot,
                 std::string("CUDA error ") + cudaGetErrorName(slot->status) + ": " + cudaGetErrorString(slot->status),
                 slot->status);
    } else if (enqueued) {
      try {
        collect_batch(run, *slot, *batch, timeline);
      } catch (const cuda::CudaError& error) {
        fail_batch(run, *batch, *slot, error.what(), error.code());
      }
    }
    slot->batch_items.reset();
    free_slots.try_put(slot);
    for (WorkItem* item : *batch) std::get<0>(ports).try_put(item);
  }, kGpuNodePriority);
  flow::make_edge(ends.read_items(), batch_items);
  flow::make_edge(flow::output_port<0>(batch_items), batches);
  flow::make_edge(flow::output_port<1>(batch_items), ends.writer());
  flow::make_edge(batches, flow::input_port<0>(to_gpu));
  flow::make_edge(free_slots, flow::input_port<1>(to_gpu));
  flow::make_edge(to_gpu, gpu);
  flow::make_edge(gpu, collect);
  flow::make_edge(flow::output_port<0>(collect), ends.writer());
  for (auto& slot : slots) free_slots.try_put(slot.get());
  ends.start(items);
  graph.wait_for_all();
  // Idle: the input is done (or every token waits in the batcher); send the partial batch.
  while (BatchPtr rest = batcher.flush()) {
    batches.try_put(std::move(rest));
    graph.wait_for_all();
  }
}

}  // namespace imflow
