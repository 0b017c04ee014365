// Copies between pageable host memory (a caller's NumPy array) and device memory through two
// pinned chunks: the host-side copy of one chunk (TBB threads) overlaps the DMA of the other.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "cuda/buffers.hpp"
#include "cuda/stream.hpp"

namespace imflow::cuda {

// One stream's staging area (create it with that stream's device current). Not thread-safe.
class StagedCopy {
 public:
  explicit StagedCopy(size_t chunk_bytes = size_t{8} << 20);

  // Enqueues host -> device on `stream`; returns once `host` may change (its bytes are in pinned
  // memory or on the device), while the last DMAs may still run.
  void upload(void* device, const void* host, size_t bytes, cudaStream_t stream);
  // Copies device -> host after the work already enqueued on `stream`; returns when `host` holds it.
  void download(void* host, const void* device, size_t bytes, cudaStream_t stream);

 private:
  size_t chunk_;
  PinnedBuffer<unsigned char> chunks_[2];
  Event copied_[2];  // the last DMA from / into each chunk
};

}  // namespace imflow::cuda
