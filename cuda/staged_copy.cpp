// StagedCopy (cuda/staged_copy.hpp): chunked, double-buffered copies through pinned memory, the
// host side of each chunk split over TBB threads (a fresh NumPy array's page faults included).
#include "cuda/staged_copy.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

#include "cuda/cuda_check.hpp"

namespace imflow::cuda {

namespace {
constexpr size_t kGrain = size_t{512} << 10;  // bytes one task copies

void parallel_copy(void* to, const void* from, size_t bytes) {
  tbb::parallel_for(tbb::blocked_range<size_t>(0, bytes, kGrain), [&](const tbb::blocked_range<size_t>& r) {
    std::memcpy(static_cast<char*>(to) + r.begin(), static_cast<const char*>(from) + r.begin(), r.size());
  });
}
}  // namespace

StagedCopy::StagedCopy(size_t chunk_bytes) : chunk_(std::max<size_t>(chunk_bytes, kGrain)) {
  for (auto& chunk : chunks_) chunk.reserve(chunk_);
}

void StagedCopy::upload(void* device, const void* host, size_t bytes, cudaStream_t stream) {
  for (size_t offset = 0, i = 0; offset < bytes; offset += chunk_, ++i) {
    const size_t k = i % 2, n = std::min(chunk_, bytes - offset);
    copied_[k].synchronize();  // the chunk's previous DMA (of this or an earlier call) is done
    parallel_copy(chunks_[k].data(), static_cast<const char*>(host) + offset, n);
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
    parallel_copy(static_cast<char*>(host) + offset, chunks_[k].data(), n);
    if (i + 2 < chunks) enqueue(i + 2);
  }
}

}  // namespace imflow::cuda
