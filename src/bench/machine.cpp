// Machine description for bench.json and the CUDA device memory sampler.
#include "bench/machine.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <vector>

#include "imflow/version.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace imflow::bench {

namespace {
std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      return line.substr(line.find(':') + 2);
    }
  }
  return "unknown";
}

#ifdef IMFLOW_HAVE_CUDA
// Bytes in use on each device now (total - free); empty when CUDA cannot answer.
std::vector<double> used_bytes(int devices) {
  std::vector<double> used;
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) return {};
  for (int d = 0; d < devices; ++d) {
    size_t free = 0, total = 0;
    if (cudaSetDevice(d) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess) {
      used.clear();
      break;
    }
    used.push_back(static_cast<double>(total - free));
  }
  cudaSetDevice(current);
  return used;
}
#endif
}  // namespace

int gpu_count() {
#ifdef IMFLOW_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
#else
  return 0;
#endif
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

nlohmann::json machine_info() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  utsname uts{};
  uname(&uts);
  nlohmann::json gpus = nlohmann::json::array();
#ifdef IMFLOW_HAVE_CUDA
  for (int d = 0; d < gpu_count(); ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) {
      gpus.push_back({{"name", prop.name}, {"memory_gb", prop.totalGlobalMem / 1e9}});
    }
  }
#endif
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  const double memory_gb = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / 1e9;
  return {{"hostname", host},
          {"cpu_model", cpu_model()},
          {"cores", std::thread::hardware_concurrency()},
          {"memory_gb", memory_gb},
          {"kernel", std::string(uts.sysname) + " " + uts.release},
          {"load_average_1m", load[0]},  // other work on the machine skews the numbers
          {"gpus", gpus},
#ifdef IMFLOW_HAVE_CUDA
          {"cuda_build", true},
#else
          {"cuda_build", false},
#endif
          {"imflow_version", kVersion}};
}

DeviceMemorySampler::DeviceMemorySampler(int devices) : devices_(devices) {
#ifdef IMFLOW_HAVE_CUDA
  if (devices_ <= 0) return;
  const std::vector<double> base = used_bytes(devices_);
  if (base.empty()) return;
  peak_bytes_ = 0;
  thread_ = std::thread([this, base] {
    while (!done_.load()) {
      const std::vector<double> now = used_bytes(devices_);
      double rise = 0;
      for (size_t d = 0; d < now.size(); ++d) rise += std::max(0.0, now[d] - base[d]);
      if (rise > peak_bytes_) peak_bytes_ = rise;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
#endif
}

DeviceMemorySampler::~DeviceMemorySampler() { stop_peak_megabytes(); }

double DeviceMemorySampler::stop_peak_megabytes() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
  return peak_bytes_ >= 0 ? peak_bytes_ / 1e6 : -1.0;
}

}  // namespace imflow::bench
