// Image views (non-owning, row-major) and a reusable owning float32 buffer whose host memory
// comes from a pluggable allocator (pageable by default, pinned when the CUDA engine owns it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace imflow {

// A non-owning view of a row-major image; rows are `width` elements apart.
template <typename T>
struct View2D {
  T* data = nullptr;
  int64_t width = 0;
  int64_t height = 0;

  int64_t size() const { return width * height; }
  T& operator()(int64_t x, int64_t y) const { return data[y * width + x]; }
  T* row(int64_t y) const { return data + y * width; }
  // A mutable view converts to a read-only one.
  operator View2D<const T>() const
    requires(!std::is_const_v<T>)
  {
    return {data, width, height};
  }
};

using ImageView = View2D<float>;
using ConstImageView = View2D<const float>;

// Source of host memory for buffers. Implementations must be thread-safe.
class HostAllocator {
 public:
  virtual ~HostAllocator() = default;
  virtual void* allocate(size_t bytes) = 0;  // throws std::bad_alloc on failure
  virtual void deallocate(void* pointer) noexcept = 0;
};

// Plain pageable memory (malloc); a buffer of 2 MiB or more starts on a 2 MiB boundary and is
// advised for transparent huge pages.
HostAllocator& pageable_allocator();

// An owning float32 image. Storage grows on demand and is never shrunk, so a pooled buffer is
// allocated once for the largest image it sees. Contents are unspecified after growing.
class ImageBuffer {
 public:
  explicit ImageBuffer(HostAllocator& allocator = pageable_allocator()) : allocator_(&allocator) {}
  ~ImageBuffer() { release(); }
  ImageBuffer(const ImageBuffer&) = delete;
  ImageBuffer& operator=(const ImageBuffer&) = delete;
  ImageBuffer(ImageBuffer&& other) noexcept { *this = std::move(other); }
  ImageBuffer& operator=(ImageBuffer&& other) noexcept {
    if (this != &other) {
      release();
      allocator_ = other.allocator_;
      data_ = std::exchange(other.data_, nullptr);
      capacity_ = std::exchange(other.capacity_, 0);
      width_ = std::exchange(other.width_, 0);
      height_ = std::exchange(other.height_, 0);
    }
    return *this;
  }

  void resize(int64_t width, int64_t height);
  // Switch allocator (frees the current storage).
  void set_allocator(HostAllocator& allocator) {
    release();
    allocator_ = &allocator;
  }

  bool empty() const { return width_ * height_ == 0; }
  int64_t width() const { return width_; }
  int64_t height() const { return height_; }
  int64_t size() const { return width_ * height_; }
  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t capacity_bytes() const { return capacity_ * sizeof(float); }
  ImageView view() { return {data_, width_, height_}; }
  ConstImageView view() const { return {data_, width_, height_}; }
  float* begin() { return data_; }
  float* end() { return data_ + size(); }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + size(); }

 private:
  void release() noexcept;
  HostAllocator* allocator_ = nullptr;
  float* data_ = nullptr;
  size_t capacity_ = 0;
  int64_t width_ = 0;
  int64_t height_ = 0;
};

}  // namespace imflow
