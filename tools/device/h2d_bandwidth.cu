// Host<->device copy bandwidth on this machine, the ceiling of the streaming engine's h2d stage:
// 64 MiB (a 4096^2 float image) and 16 MiB copies from pinned memory allocated as imflow does
// (cudaHostAllocPortable | cudaHostAllocMapped) and from pageable memory, on 1 and 4 streams,
// timed with CUDA events. Build and run: nvcc -O2 -o /tmp/h2d tools/device/h2d_bandwidth.cu && /tmp/h2d
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "check.cuh"

// GB/s of `repeats` copies of `bytes` on each of `streams` streams, all in flight together.
double bandwidth(size_t bytes, int streams, int repeats, bool pinned, bool to_device) {
  std::vector<void*> host(streams), device(streams);
  std::vector<cudaStream_t> s(streams);
  for (int i = 0; i < streams; ++i) {
    if (pinned) CHECK(cudaHostAlloc(&host[i], bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    else host[i] = std::malloc(bytes);
    std::memset(host[i], 1, bytes);
    CHECK(cudaMalloc(&device[i], bytes));
    CHECK(cudaStreamCreate(&s[i]));
  }
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaEventRecord(start, 0));
  for (int r = 0; r < repeats; ++r)
    for (int i = 0; i < streams; ++i) {
      if (to_device) CHECK(cudaMemcpyAsync(device[i], host[i], bytes, cudaMemcpyHostToDevice, s[i]));
      else CHECK(cudaMemcpyAsync(host[i], device[i], bytes, cudaMemcpyDeviceToHost, s[i]));
    }
  for (int i = 0; i < streams; ++i) CHECK(cudaStreamSynchronize(s[i]));
  CHECK(cudaEventRecord(stop, 0));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  for (int i = 0; i < streams; ++i) {
    if (pinned) CHECK(cudaFreeHost(host[i]));
    else std::free(host[i]);
    CHECK(cudaFree(device[i]));
    CHECK(cudaStreamDestroy(s[i]));
  }
  return static_cast<double>(bytes) * streams * repeats / (ms * 1e-3) / 1e9;
}

int main() {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("{\"device\": \"%s\", \"pci_bus\": %d, \"results\": [\n", prop.name, prop.pciBusID);
  bool first = true;
  for (size_t mib : {16, 64})
    for (int streams : {1, 4})
      for (int pinned : {1, 0})
        for (int to_device : {1, 0}) {
          const double gbs = bandwidth(mib << 20, streams, 10, pinned, to_device);
          std::printf("%s {\"mib\": %zu, \"streams\": %d, \"pinned\": %s, \"direction\": \"%s\", \"gb_per_s\": %.2f}",
                      first ? "" : ",\n", mib, streams, pinned ? "true" : "false", to_device ? "h2d" : "d2h", gbs);
          first = false;
        }
  std::printf("\n]}\n");
}
