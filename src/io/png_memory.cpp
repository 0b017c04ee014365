// Per-thread block cache behind libpng's (and so zlib's) allocations (png_memory.hpp).
#include "png_memory.hpp"

#include <array>
#include <cstdint>
#include <cstdlib>

namespace imflow::detail {

namespace {
constexpr size_t kHeader = alignof(std::max_align_t);  // each block starts with its capacity
constexpr size_t kMaxBlocks = 24;
constexpr size_t kMaxBytes = size_t{2} << 20;

// Fixed storage: nothing here allocates, so nothing can throw inside libpng's callbacks.
struct BlockCache {
  std::array<unsigned char*, kMaxBlocks> blocks{};
  size_t count = 0;
  size_t bytes = 0;
  BlockCache() = default;
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;
  ~BlockCache() {
    for (size_t i = 0; i < count; ++i) std::free(blocks[i]);
    count = 0;
  }
};
thread_local BlockCache cache;

size_t& capacity(unsigned char* raw) { return *reinterpret_cast<size_t*>(raw); }
}  // namespace

png_voidp png_cached_malloc(png_structp, png_alloc_size_t size) {
  // The smallest kept block that holds `size` without wasting more than about half of itself.
  size_t best = kMaxBlocks;
  for (size_t i = 0; i < cache.count; ++i) {
    const size_t have = capacity(cache.blocks[i]);
    if (have >= size && have <= 2 * size + 256 && (best == kMaxBlocks || have < capacity(cache.blocks[best]))) best = i;
  }
  if (best != kMaxBlocks) {
    unsigned char* raw = cache.blocks[best];
    cache.blocks[best] = cache.blocks[--cache.count];
    cache.bytes -= capacity(raw);
    return raw + kHeader;
  }
  if (size > SIZE_MAX - kHeader) return nullptr;
  auto* raw = static_cast<unsigned char*>(std::malloc(size + kHeader));
  if (raw == nullptr) return nullptr;
  capacity(raw) = size;
  return raw + kHeader;
}

void png_cached_free(png_structp, png_voidp block) {
  if (block == nullptr) return;
  unsigned char* raw = static_cast<unsigned char*>(block) - kHeader;
  const size_t have = capacity(raw);
  if (cache.count < kMaxBlocks && cache.bytes + have <= kMaxBytes) {
    cache.blocks[cache.count++] = raw;
    cache.bytes += have;
    return;
  }
  std::free(raw);
}

}  // namespace imflow::detail
