// A GPU slot: one CUDA stream with its device context (buffers, results) and the timing events
// of the work on it. A slot serves one item, or one batch of items, at a time (gpu_stage.hpp).
#pragma once
#include <tbb/flow_graph.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cuda/gpu_batch.hpp"
#include "cuda/gpu_context.hpp"
#include "cuda/resources.hpp"

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

  // Batch mode (gpu_batch_graph.cpp): the batch buffers, created on first use.
  std::unique_ptr<GpuBatch> batch;

  // Work its items need not wait for, run once they have gone on and before the slot takes
  // another unit (a GPU-resident image's device buffers given back); must not throw.
  std::function<void()> after_hand_on;
};

}  // namespace imflow
