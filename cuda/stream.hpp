// RAII, move-only CUDA streams (non-blocking) and events (timing or not).
#pragma once
#include <cuda_runtime_api.h>

#include <utility>

namespace imflow::cuda {

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

}  // namespace imflow::cuda
