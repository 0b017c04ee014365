// The pinned allocator (cuda/pinned_allocator.hpp): small blocks share slabs, large ones get their own
// allocation, blocks never overlap, are 256-byte aligned, usable by async copies, and every slab
// is returned when its last block is freed (or cached for reuse, up to a limit).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda/resources.hpp"
#include "gpu_test_helpers.hpp"

namespace icuda = imflow::cuda;

TEST_CASE("pinned allocator: slabs for small blocks, own allocations for large ones", "[gpu][pinned][sanitize]") {
  icuda::PinnedAllocator allocator;
  constexpr size_t kSmall = 217 * 181 * sizeof(float);
  std::vector<char*> blocks;
  const size_t count = 2 * icuda::PinnedAllocator::kSlabBytes / kSmall;  // spills over into a second and third slab
  for (size_t i = 0; i < count; ++i) blocks.push_back(static_cast<char*>(allocator.allocate(kSmall)));
  CHECK(allocator.pinned_allocations() == 3);
  auto sorted = blocks;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i + 1 < sorted.size(); ++i) CHECK(sorted[i] + kSmall <= sorted[i + 1]);
  for (char* block : blocks) CHECK(reinterpret_cast<uintptr_t>(block) % 256 == 0);

  char* large = static_cast<char*>(allocator.allocate(icuda::PinnedAllocator::kSlabBlock + 1));
  CHECK(allocator.pinned_allocations() == 4);

  // Every block is real pinned memory: a round trip through the device by async copies.
  icuda::Stream stream;
  icuda::DeviceBuffer<char> device;
  device.reserve(kSmall);
  for (char* block : {blocks.front(), blocks[count / 2], blocks.back()}) {
    std::fill(block, block + kSmall, static_cast<char>(reinterpret_cast<uintptr_t>(block) >> 8));
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(device.data(), block, kSmall, cudaMemcpyHostToDevice, stream.get()));
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(large, device.data(), kSmall, cudaMemcpyDeviceToHost, stream.get()));
    IMFLOW_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    CHECK(std::equal(block, block + kSmall, large));
  }

  allocator.deallocate(large);
  CHECK(allocator.pinned_allocations() == 3);
  for (size_t i = 0; i < count / 2; ++i) allocator.deallocate(blocks[i]);  // the first slab's blocks (and some)
  CHECK(allocator.pinned_allocations() == 2);
  for (size_t i = count / 2; i < count; ++i) allocator.deallocate(blocks[i]);
  CHECK(allocator.pinned_allocations() == 0);
}

TEST_CASE("pinned allocator: freed slabs and large blocks are reused up to the cache limit", "[gpu][pinned][sanitize]") {
  constexpr size_t kSlab = icuda::PinnedAllocator::kSlabBytes;
  constexpr size_t kLarge = icuda::PinnedAllocator::kSlabBlock + 1;
  icuda::PinnedAllocator allocator(kSlab + 2 * (kLarge + 4096));  // one slab and two large blocks
  constexpr size_t kSmall = 1 << 20;
  std::vector<void*> small;
  for (int i = 0; i < 100; ++i) small.push_back(allocator.allocate(kSmall));  // two slabs (63 blocks fill one)
  void* large_a = allocator.allocate(kLarge);
  void* large_b = allocator.allocate(kLarge);
  void* large_c = allocator.allocate(kLarge);
  CHECK(allocator.pinned_allocations() == 5);
  for (void* block : small) allocator.deallocate(block);
  CHECK(allocator.pinned_allocations() == 4);  // one slab cached, the other returned
  CHECK(allocator.cached_bytes() == kSlab);
  allocator.deallocate(large_a);
  allocator.deallocate(large_b);
  allocator.deallocate(large_c);  // over the limit: returned
  CHECK(allocator.pinned_allocations() == 3);
  const size_t cached = allocator.cached_bytes();
  CHECK(cached > kSlab);
  CHECK(cached <= kSlab + 2 * (kLarge + 4096));

  // Reuse: the same blocks come back, no new driver allocations.
  void* again_large = allocator.allocate(kLarge);
  CHECK((again_large == large_a || again_large == large_b));
  void* again_small = allocator.allocate(kSmall);
  CHECK(allocator.pinned_allocations() == 3);
  CHECK(allocator.cached_bytes() == cached - kSlab - (cached - kSlab) / 2);
  // Reused pinned memory still works with async copies.
  icuda::Stream stream;
  icuda::DeviceBuffer<char> device;
  device.reserve(kSmall);
  auto* bytes = static_cast<char*>(again_small);
  std::fill(bytes, bytes + kSmall, static_cast<char>(7));
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(device.data(), bytes, kSmall, cudaMemcpyHostToDevice, stream.get()));
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(again_large, device.data(), kSmall, cudaMemcpyDeviceToHost, stream.get()));
  IMFLOW_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  CHECK(std::equal(bytes, bytes + kSmall, static_cast<char*>(again_large)));

  allocator.deallocate(again_small);
  allocator.deallocate(again_large);
  allocator.release_cached();
  CHECK(allocator.pinned_allocations() == 0);
  CHECK(allocator.cached_bytes() == 0);
}
