// Where a benchmark ran (host, CPU model, cores, GPUs, imflow version, date) and a sampler of
// the GPU memory in use during a run (CUDA builds only).
#pragma once
#include <nlohmann/json.hpp>

#include <atomic>
#include <string>
#include <thread>

namespace imflow::bench {

// {hostname, cpu_model, cores, memory_gb, gpus: [names], cuda_build, imflow_version, kernel}
nlohmann::json machine_info();
// UTC date and time, ISO 8601.
std::string utc_now();
// CUDA devices visible to this build (0 without CUDA).
int gpu_count();

// Polls cudaMemGetInfo on devices 0..devices-1 every few milliseconds from construction until
// stop; the peak is the largest rise of used memory above what was used at construction.
class DeviceMemorySampler {
 public:
  explicit DeviceMemorySampler(int devices);
  ~DeviceMemorySampler();
  DeviceMemorySampler(const DeviceMemorySampler&) = delete;
  DeviceMemorySampler& operator=(const DeviceMemorySampler&) = delete;
  // Stop sampling; the peak in MB summed over devices, or -1 when nothing was sampled.
  double stop_peak_megabytes();

 private:
  int devices_;
  std::atomic<bool> done_{false};
  double peak_bytes_ = -1;
  std::thread thread_;
};

}  // namespace imflow::bench
