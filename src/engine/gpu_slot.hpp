// A GPU slot: one CUDA stream with its device context (buffers, results) and the timing events
// of the item it is working on. A slot serves one item, or one batch of items, at a time.
#pragma once
#include <cuda_runtime_api.h>
#include <tbb/flow_graph.h>

#include <exception>

#include <memory>
#include <string>
#include <vector>

#include "cuda/gpu_batch.hpp"
#include "cuda/gpu_context.hpp"
#include "cuda/resources.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

// Priority of the nodes that feed and drain the GPUs (batching, submission, collection): their
// tasks run before queued reads and writes, so a GPU does not idle while every worker thread is
// busy decoding or encoding files (measured on 2 GPUs: their per-item kernel time stretched 1.6x).
inline constexpr tbb::flow::node_priority_t kGpuNodePriority = 1;

struct GpuSlot {
  GpuSlot(int device, int index, size_t steps);

  int device;
  int index;                         // slot number on its device
  cuda::Stream stream;
  std::unique_ptr<GpuContext> context;
  // marks[0]: before upload; [1]: after upload; [2 + s]: after step s; [2 + steps]: after download.
  std::vector<cuda::Event> marks;
  std::string track;                 // trace row, e.g. "gpu0 stream 1"

  // Batch mode (gpu_batch_graph.cpp): the batch buffers (created on first use) and the items of
  // the batch on the GPU.
  std::unique_ptr<GpuBatch> batch;
  std::shared_ptr<std::vector<WorkItem*>> batch_items;

  // Set while an item is on the GPU.
  WorkItem* item = nullptr;
  void* gateway = nullptr;           // the async_node gateway to hand the item back through
  cudaError_t status = cudaSuccess;  // what the stream reported at completion
};

// The body of the GPU stage's async_node, for one item or one batch on `slot`: holds the graph
// open (reserve_wait) until the stream's completion callback `done` hands `work` on through the
// gateway. With `skip` the work is handed on at once. `enqueue` queues the copies and kernels
// (never waits); when it throws, nothing will call back, so the stream is drained before
// `on_error(what, code)` marks the work failed and it is handed on.
template <typename Work, typename Gateway, typename Enqueue, typename OnError>
void submit_to_stream(GpuSlot& slot, const Work& work, Gateway& gateway, cudaStreamCallback_t done, bool skip,
                      Enqueue&& enqueue, OnError&& on_error) {
  gateway.reserve_wait();
  slot.status = cudaSuccess;
  if (skip) {
    gateway.try_put(work);
    gateway.release_wait();
    return;
  }
  slot.gateway = &gateway;
  try {
    enqueue();
    IMFLOW_CUDA_CHECK(cudaStreamAddCallback(slot.stream, done, &slot, 0));
  } catch (const std::exception& error) {
    const cudaError_t code = cudaStreamSynchronize(slot.stream);
    const auto* cuda_error = dynamic_cast<const cuda::CudaError*>(&error);
    on_error(error.what(), cuda_error ? cuda_error->code() : code);
    gateway.try_put(work);
    gateway.release_wait();
  }
}

}  // namespace imflow
