// One slot's device state for a batch of same-shape items (the CUDA graph's `batch` option):
// the images contiguous on the device, per-item results, and the batched upload / download /
// collect entry points. Steps that support batches (Step::run_cuda_batch) work on it.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "cuda/gpu_context.hpp"
#include "cuda/resources.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

namespace cuda {
struct SvdBatchState;
}

struct GpuBatch {
  // `stream` is not owned; it must belong to `device`.
  GpuBatch(int device, cudaStream_t stream);
  GpuBatch(const GpuBatch&) = delete;
  GpuBatch& operator=(const GpuBatch&) = delete;

  int device = 0;
  cudaStream_t stream = nullptr;
  int64_t width = 0, height = 0;  // every item of the batch has this shape
  int count = 0;
  int64_t pixels() const { return width * height; }

  cuda::DeviceBuffer<float> images;  // count images, image b at b * pixels()
  cuda::DeviceBuffer<float> spare;   // output of a step that rebuilds the images, swapped with `images`
  cuda::DeviceBuffer<cuda::DeviceResults> results;  // one per item
  cuda::PinnedBuffer<cuda::DeviceResults> results_host;

  // Which steps ran on the batch (set on the host as they are enqueued).
  bool image_modified = false;
  bool has_normalization = false;
  bool has_svd_metrics = false;
  std::shared_ptr<cuda::SvdBatchState> svd;  // svd_reconstruct's batched solver state

  size_t max_shared_optin = 0;
};

namespace cuda {

// Copy the items' pixels (same shape, pinned host buffers) into batch.images, reset the flags
// and the per-item results. Throws std::invalid_argument when the shapes differ.
void enqueue_batch_upload(GpuBatch& batch, WorkItem* const* items, int count);

// Copy the results back and, when a step changed the images, each image straight into its
// item's pixel buffer (pinned). Never synchronizes.
void enqueue_batch_download(GpuBatch& batch, WorkItem* const* items, int count);

// After the stream completed: item `index`'s normalization and SVD metrics into it. Throws
// std::runtime_error (failing that item only) when its SVD failed.
void collect_batch_item(GpuBatch& batch, int index, WorkItem& item);

}  // namespace cuda
}  // namespace imflow
