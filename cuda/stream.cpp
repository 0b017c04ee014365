// Stream and Event (stream.hpp): creation, recording, waiting, destruction.
#include "cuda/stream.hpp"

#include "cuda/cuda_check.hpp"

namespace imflow::cuda {

Stream::Stream() { IMFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }

void Stream::synchronize() const { IMFLOW_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void Stream::reset() noexcept {
  if (stream_ != nullptr) IMFLOW_CUDA_LOG(cudaStreamDestroy(stream_));
  stream_ = nullptr;
}

Event::Event(bool timing) {
  IMFLOW_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

void Event::record(cudaStream_t stream) const { IMFLOW_CUDA_CHECK(cudaEventRecord(event_, stream)); }

bool Event::query() const {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) return false;
  IMFLOW_CUDA_CHECK(status);
  return true;
}

void Event::synchronize() const { IMFLOW_CUDA_CHECK(cudaEventSynchronize(event_)); }

float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0.0f;
  IMFLOW_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, stop.event_));
  return ms;
}

void Event::reset() noexcept {
  if (event_ != nullptr) IMFLOW_CUDA_LOG(cudaEventDestroy(event_));
  event_ = nullptr;
}

}  // namespace imflow::cuda
