// CUDA devices: how many are usable (never throwing), their names, and a scope guard that makes
// one of them current.
#pragma once
#include <string>

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

}  // namespace imflow::cuda
