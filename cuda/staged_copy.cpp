// StagedCopy (cuda/staged_copy.hpp): chunked, double-buffered copies through pinned memory, the
// host side of each chunk split over TBB threads (copy_on_all_threads; a fresh NumPy array's page
// faults included).
#include "cuda/staged_copy.hpp"

#include <algorithm>

#include "cuda/cuda_check.hpp"
#include "imflow/parallel_memory.hpp"

namespace imflow::cuda {

namespace {
constexpr size_t kMinChunkBytes = size_t{512} << 10;
}  // namespace

StagedCopy::StagedCopy(size_t chunk_bytes) : chunk_(std::max<size_t>(chunk_bytes, kMinChunkBytes)) {
  for (auto& chunk : chunks_) chunk.reserve(chunk_);
}

void StagedCopy::upload(void* device, const void* host, size_t bytes, cudaStream_t stream) {
  for (size_t offset = 0, i = 0; offset < bytes; offset += chunk_, ++i) {
    const size_t k = i % 2, n = std::min(chunk_, bytes - offset);
    copied_[k].synchronize();  // the chunk's previous DMA (of this or an earlier call) is done
    copy_on_all_threads(chunks_[k].data(), static_cast<const char*>(host) + offset, n);
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(device) + offset, chunks_[k].data(), n,
                                      cudaMemcpyHostToDevice, stream));
    copied_[k].record(stream);
  }
}

void StagedCopy::download(void* host, const void* device, size_t bytes, cudaStream_t stream) {
  const size_t chunks = (bytes + chunk_ - 1) / chunk_;
  auto enqueue = [&](size_t i) {
    const size_t k = i % 2, offset = i * chunk_, n = std::min(chunk_, bytes - offset);
    copied_[k].synchronize();
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(chunks_[k].data(), static_cast<const char*>(device) + offset, n,
                                      cudaMemcpyDeviceToHost, stream));
    copied_[k].record(stream);
  };
  for (size_t i = 0; i < std::min<size_t>(chunks, 2); ++i) enqueue(i);
  for (size_t i = 0; i < chunks; ++i) {
    const size_t k = i % 2, offset = i * chunk_, n = std::min(chunk_, bytes - offset);
    copied_[k].synchronize();
    copy_on_all_threads(static_cast<char*>(host) + offset, chunks_[k].data(), n);
    if (i + 2 < chunks) enqueue(i + 2);
  }
}

}  // namespace imflow::cuda
