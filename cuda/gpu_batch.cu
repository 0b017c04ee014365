// GpuBatch (cuda/gpu_batch.hpp): batched upload, download and per-item collection.
#include <stdexcept>
#include <string>

#include "cuda/gpu_batch.hpp"
#include "cuda/svd.hpp"

namespace imflow {

GpuBatch::GpuBatch(int device_, cudaStream_t stream_) : device(device_), stream(stream_) {
  cuda::DeviceGuard guard(device);
  int optin = 0;
  IMFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  max_shared_optin = static_cast<size_t>(optin);
}

namespace cuda {

void enqueue_batch_upload(GpuBatch& batch, WorkItem* const* items, int count) {
  DeviceGuard guard(batch.device);
  if (count <= 0) throw std::invalid_argument("enqueue_batch_upload: empty batch");
  batch.width = items[0]->pixels.width();
  batch.height = items[0]->pixels.height();
  for (int b = 1; b < count; ++b) {
    if (items[b]->pixels.width() != batch.width || items[b]->pixels.height() != batch.height) {
      throw std::invalid_argument("enqueue_batch_upload: item " + std::to_string(b) + " is " +
                                  std::to_string(items[b]->pixels.width()) + "x" +
                                  std::to_string(items[b]->pixels.height()) + ", the batch is " +
                                  std::to_string(batch.width) + "x" + std::to_string(batch.height));
    }
  }
  batch.count = count;
  const size_t pixels = static_cast<size_t>(batch.pixels());
  batch.images.reserve(pixels * count + 4);
  batch.spare.reserve(pixels * count + 4);
  batch.results.reserve(count);
  batch.results_host.reserve(count);
  if (pixels > 0) {
    for (int b = 0; b < count; ++b) {
      IMFLOW_CUDA_CHECK(cudaMemcpyAsync(batch.images.data() + pixels * b, items[b]->pixels.data(),
                                        pixels * sizeof(float), cudaMemcpyHostToDevice, batch.stream));
    }
  }
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(batch.results.data(), 0, sizeof(DeviceResults) * count, batch.stream));
  batch.image_modified = batch.has_normalization = batch.has_svd_metrics = false;
}

void enqueue_batch_download(GpuBatch& batch, WorkItem* const* items, int count) {
  DeviceGuard guard(batch.device);
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(batch.results_host.data(), batch.results.data(), sizeof(DeviceResults) * count,
                                    cudaMemcpyDeviceToHost, batch.stream));
  const size_t pixels = static_cast<size_t>(batch.pixels());
  if (!batch.image_modified || pixels == 0) return;
  for (int b = 0; b < count; ++b) {
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(items[b]->pixels.data(), batch.images.data() + pixels * b,
                                      pixels * sizeof(float), cudaMemcpyDeviceToHost, batch.stream));
  }
}

void collect_batch_item(GpuBatch& batch, int index, WorkItem& item) {
  const DeviceResults& r = batch.results_host.data()[index];
  if (batch.has_normalization) collect_normalization(r, item);
  if (batch.has_svd_metrics) copy_svd_metrics(r, item);
}

}  // namespace cuda
}  // namespace imflow
