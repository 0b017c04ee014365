// Raw device allocation under DeviceBuffer (buffers.hpp).
#include "cuda/buffers.hpp"

namespace imflow::cuda {

void* device_allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* pointer = nullptr;
  IMFLOW_CUDA_CHECK(cudaMalloc(&pointer, bytes));
  return pointer;
}

void device_free(void* pointer) noexcept {
  if (pointer != nullptr) IMFLOW_CUDA_LOG(cudaFree(pointer));
}

}  // namespace imflow::cuda
