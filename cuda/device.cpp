// Device discovery and DeviceGuard (device.hpp).
#include "cuda/device.hpp"

#include <cuda_runtime_api.h>

#include "cuda/cuda_check.hpp"

namespace imflow::cuda {

int device_count() noexcept {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // no driver / no device: not an error for the caller
    return 0;
  }
  return count;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  IMFLOW_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

DeviceGuard::DeviceGuard(int device) {
  IMFLOW_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) {
    IMFLOW_CUDA_CHECK(cudaSetDevice(device));
    changed_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (changed_) IMFLOW_CUDA_LOG(cudaSetDevice(previous_));
}

}  // namespace imflow::cuda
