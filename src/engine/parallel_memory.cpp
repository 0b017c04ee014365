// Copies and first touches on all threads (include/imflow/parallel_memory.hpp).
#include "imflow/parallel_memory.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "imflow/huge_pages.hpp"

namespace imflow {

namespace {
constexpr size_t kCopyGrain = size_t{512} << 10;  // bytes one task copies
}  // namespace

void copy_on_all_threads(void* to, const void* from, size_t bytes) {
  if (bytes < 8 * kCopyGrain) {
    if (bytes != 0) std::memcpy(to, from, bytes);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<size_t>(0, bytes, kCopyGrain), [&](const tbb::blocked_range<size_t>& r) {
    std::memcpy(static_cast<char*>(to) + r.begin(), static_cast<const char*>(from) + r.begin(), r.size());
  });
}

bool fault_in_on_all_threads(void* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  if (data == nullptr || bytes < 4 * kHugePageBytes) return false;
  // Whole huge pages inside the range, a task's pages apart from every other task's.
  const auto begin = (reinterpret_cast<uintptr_t>(data) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) / kHugePageBytes * kHugePageBytes;
  std::atomic<bool> all{true};
  tbb::parallel_for(tbb::blocked_range<uintptr_t>(0, (end - begin) / kHugePageBytes), [&](const tbb::blocked_range<uintptr_t>& r) {
    if (madvise(reinterpret_cast<void*>(begin + r.begin() * kHugePageBytes), r.size() * kHugePageBytes,
                MADV_POPULATE_WRITE) != 0) {
      all.store(false, std::memory_order_relaxed);  // an old kernel (EINVAL), or no memory: the first touch will do
    }
  });
  return all.load();
#else
  (void)data;
  (void)bytes;
  return false;
#endif
}

}  // namespace imflow
