// What a 64 MiB pinned host buffer costs to make on this machine, and how fast it uploads:
// cudaHostAlloc (as imflow's pool) against mmap + MADV_HUGEPAGE + first touch + cudaHostRegister
// (2 MiB pages: 32 pages to pin instead of 16,384). Build and run:
//   nvcc -O2 -o /tmp/pa tools/device/pinned_alloc.cu && /tmp/pa
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.cuh"

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double upload_gbs(void* host, void* device, size_t bytes) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a));
  for (int i = 0; i < 10; ++i) CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice));
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  return 10.0 * bytes / (ms * 1e-3) / 1e9;
}

int main() {
  const size_t bytes = size_t{64} << 20;
  CHECK(cudaFree(nullptr));  // context first
  void* device = nullptr;
  CHECK(cudaMalloc(&device, bytes));
  std::printf("{\"bytes\": %zu, \"results\": [\n", bytes);
  for (int round = 0; round < 3; ++round) {
    auto t = Clock::now();
    void* host = nullptr;
    CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    const double alloc_ms = ms_since(t);
    t = Clock::now();
    std::memset(host, 1, bytes);
    const double touch_ms = ms_since(t);
    const double gbs = upload_gbs(host, device, bytes);
    t = Clock::now();
    CHECK(cudaFreeHost(host));
    std::printf(" {\"method\": \"cudaHostAlloc\", \"alloc_ms\": %.2f, \"first_touch_ms\": %.2f, \"h2d_gb_per_s\": %.1f, \"free_ms\": %.2f},\n",
                alloc_ms, touch_ms, gbs, ms_since(t));
    for (int huge = 0; huge < 2; ++huge) {
      t = Clock::now();
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return 1;
      if (huge) madvise(p, bytes, MADV_HUGEPAGE);
      std::memset(p, 1, bytes);
      const double map_touch_ms = ms_since(t);
      t = Clock::now();
      CHECK(cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped));
      const double register_ms = ms_since(t);
      const double gbs2 = upload_gbs(p, device, bytes);
      t = Clock::now();
      CHECK(cudaHostUnregister(p));
      munmap(p, bytes);
      std::printf(" {\"method\": \"mmap%s + touch + cudaHostRegister\", \"map_and_touch_ms\": %.2f, \"register_ms\": %.2f, \"h2d_gb_per_s\": %.1f, \"free_ms\": %.2f}%s\n",
                  huge ? " + MADV_HUGEPAGE" : "", map_touch_ms, register_ms, gbs2, ms_since(t),
                  round == 2 && huge ? "" : ",");
    }
  }
  std::printf("]}\n");
}
