// Grow-only, move-only RAII buffers: DeviceBuffer (device memory, cudaMalloc) and PinnedBuffer
// (mapped pinned host memory from the process-wide PinnedAllocator).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "cuda/cuda_check.hpp"
#include "cuda/pinned_allocator.hpp"

namespace imflow::cuda {

// Raw device allocation (throws CudaError; out of memory reads out_of_memory()).
void* device_allocate(size_t bytes);
void device_free(void* pointer) noexcept;

// Device memory for n elements of T that only grows: reserve(n) reallocates (discarding the
// contents) only when n exceeds the capacity. Never synchronizes except inside cudaMalloc/cudaFree.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { reserve(n); }
  ~DeviceBuffer() { device_free(data_); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      device_free(data_);
      data_ = std::exchange(other.data_, nullptr);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void reserve(size_t n) {
    if (n <= capacity_) return;
    device_free(std::exchange(data_, nullptr));
    capacity_ = 0;
    data_ = static_cast<T*>(device_allocate(n * sizeof(T)));
    capacity_ = n;
  }
  T* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  friend void swap(DeviceBuffer& a, DeviceBuffer& b) noexcept {
    std::swap(a.data_, b.data_);
    std::swap(a.capacity_, b.capacity_);
  }

 private:
  T* data_ = nullptr;
  size_t capacity_ = 0;
};

// Pinned host memory for n elements of T, grow-only like DeviceBuffer. Mapped: kernels may write
// it directly through device_pointer().
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { cached_pinned_free(data_); }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      cached_pinned_free(data_);
      data_ = std::exchange(other.data_, nullptr);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void reserve(size_t n) {
    if (n <= capacity_) return;
    cached_pinned_free(std::exchange(data_, nullptr));
    capacity_ = 0;
    data_ = static_cast<T*>(cached_pinned_allocate(n * sizeof(T)));
    capacity_ = n;
  }
  T* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  // The address kernels use to read/write this memory (zero-copy).
  T* device_pointer() const {
    void* device = nullptr;
    if (data_ != nullptr) IMFLOW_CUDA_CHECK(cudaHostGetDevicePointer(&device, data_, 0));
    return static_cast<T*>(device);
  }

 private:
  T* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace imflow::cuda
