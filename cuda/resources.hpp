// RAII, move-only owners of CUDA resources: streams, events, grow-only device and pinned
// buffers, the pinned HostAllocator, and device discovery that never throws.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "imflow/image.hpp"

namespace imflow::cuda {

// Number of usable CUDA devices; 0 (never an exception) without a driver or a device.
int device_count() noexcept;
// The device's marketing name, e.g. "NVIDIA H100 80GB HBM3".
std::string device_name(int device);

// Makes `device` current for the scope when it is not already (restores the previous one).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool changed_ = false;
};

// A non-blocking stream (does not synchronize with the legacy default stream).
class Stream {
 public:
  Stream();  // on the current device
  ~Stream() { reset(); }
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      reset();
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  operator cudaStream_t() const { return stream_; }  // NOLINT: used like the handle
  void synchronize() const;

 private:
  void reset() noexcept;
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  explicit Event(bool timing = false);
  ~Event() { reset(); }
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      reset();
      event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }
  operator cudaEvent_t() const { return event_; }  // NOLINT
  void record(cudaStream_t stream) const;
  bool query() const;  // true when complete
  void synchronize() const;
  // Milliseconds between two recorded, completed, timing-enabled events.
  static float elapsed_ms(const Event& start, const Event& stop);

 private:
  void reset() noexcept;
  cudaEvent_t event_ = nullptr;
};

// Raw allocation helpers (throw CudaError; out of memory reads out_of_memory()).
void* device_allocate(size_t bytes);
void device_free(void* pointer) noexcept;
// Pinned (page-locked, mapped, portable) host memory; throws std::bad_alloc on failure.
void* pinned_allocate(size_t bytes);
void pinned_free(void* pointer) noexcept;
// The same from the process-wide PinnedAllocator (pinned_allocator() below: slabs, registered
// huge-page blocks, a cache of freed ones); what PinnedBuffer uses.
void* cached_pinned_allocate(size_t bytes);
void cached_pinned_free(void* pointer) noexcept;

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
