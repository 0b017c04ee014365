// The pinned allocator (cuda/resources.hpp): small blocks share slabs, large ones get their own
// allocation, blocks never overlap, are 256-byte aligned, usable by async copies, and every slab
// is returned when its last block is freed.
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
