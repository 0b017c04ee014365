// ImageBuffer storage management and the default pageable allocator.
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "imflow/huge_pages.hpp"
#include "imflow/image.hpp"

namespace imflow {

namespace {
class PageableAllocator final : public HostAllocator {
 public:
  void* allocate(size_t bytes) override {
    // A buffer of 2 MiB or more starts on a 2 MiB boundary, so that all of it can be huge pages
    // (unaligned, its first and last 2 MiB fault in 4 KiB pages); first touched by the reader,
    // 2 MiB pages fault 4x faster.
    if (bytes < kHugePageBytes) {
      void* pointer = std::malloc(bytes > 0 ? bytes : 1);
      if (pointer == nullptr) throw std::bad_alloc();
      return pointer;
    }
    void* pointer = nullptr;
    if (posix_memalign(&pointer, kHugePageBytes, bytes) != 0) throw std::bad_alloc();
    advise_huge_pages(pointer, bytes);
    return pointer;
  }
  void deallocate(void* pointer) noexcept override { std::free(pointer); }
};
}  // namespace

HostAllocator& pageable_allocator() {
  static PageableAllocator allocator;
  return allocator;
}

void ImageBuffer::resize(int64_t width, int64_t height) {
  if (width < 0 || height < 0) throw std::invalid_argument("ImageBuffer::resize: negative size");
  const size_t needed = static_cast<size_t>(width) * static_cast<size_t>(height);
  if (needed > capacity_) {
    release();
    data_ = static_cast<float*>(allocator_->allocate(needed * sizeof(float)));
    capacity_ = needed;
  }
  width_ = width;
  height_ = height;
}

void ImageBuffer::release() noexcept {
  if (data_ != nullptr) allocator_->deallocate(data_);
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace imflow
