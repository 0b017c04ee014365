// Pinned host memory: the raw cudaHostAlloc calls, and the process-wide PinnedAllocator that
// carves small blocks from 64 MiB slabs, gives large ones huge-page mappings pinned with
// cudaHostRegister, and keeps freed ones for reuse.
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "imflow/image.hpp"

namespace imflow::cuda {

// Pinned (page-locked, mapped, portable) host memory; throws std::bad_alloc on failure.
void* pinned_allocate(size_t bytes);
void pinned_free(void* pointer) noexcept;
// The same from the process-wide PinnedAllocator (pinned_allocator() below: slabs, registered
// huge-page blocks, a cache of freed ones); what PinnedBuffer (buffers.hpp) uses.
void* cached_pinned_allocate(size_t bytes);
void cached_pinned_free(void* pointer) noexcept;

// imflow::HostAllocator of pinned memory for ImageBuffers whose copies to and from the device
// must be truly asynchronous. Requests up to kSlabBlock bytes are carved from 64 MiB pinned slabs
// (one cudaHostAlloc per slab instead of one per work item: hundreds of small MRI items used to
// pay a driver call each, serialised, inside the reader). Larger requests get their own huge-page
// mapping pinned with cudaHostRegister (cudaHostAlloc where that fails). A slab whose last block
// is freed, and a freed large block, are kept for reuse up to `cache_bytes` (a later run in the
// same process, e.g. `imflow bench` repeats, then pays no driver calls: ~30 ms per 64 MiB on the
// H100 host); beyond that, and on release_cached(), they go back to the driver. Thread-safe.
class PinnedAllocator final : public HostAllocator {
 public:
  static constexpr size_t kSlabBytes = size_t{64} << 20;
  static constexpr size_t kSlabBlock = size_t{4} << 20;
  explicit PinnedAllocator(size_t cache_bytes = 0) : cache_limit_(cache_bytes) {}
  ~PinnedAllocator() override;
  PinnedAllocator(const PinnedAllocator&) = delete;
  PinnedAllocator& operator=(const PinnedAllocator&) = delete;
  void* allocate(size_t bytes) override;
  void deallocate(void* pointer) noexcept override;
  // Return the cached (free) slabs and blocks to the driver.
  void release_cached() noexcept;
  // Slabs and large blocks currently held from the driver, in use or cached (for tests).
  size_t pinned_allocations() const;
  // Bytes held in the cache (for tests).
  size_t cached_bytes() const;

  struct Slab;

 private:
  void free_block(char* block) noexcept;  // a large block's header starts at `block`

  mutable std::mutex mutex_;
  Slab* current_ = nullptr;  // the slab new small blocks are carved from
  size_t allocations_ = 0;
  size_t cache_limit_ = 0;
  size_t cached_ = 0;
  std::vector<Slab*> spare_slabs_;                // empty slabs kept for reuse
  std::multimap<size_t, char*> spare_blocks_;     // free large blocks by size, kept for reuse
};

// A process-wide PinnedAllocator (caching up to 2 GiB of freed pinned memory).
PinnedAllocator& pinned_allocator();

}  // namespace imflow::cuda
