// What the one-time costs of a short MRI run are on this machine: CUDA context, library handles,
// the first cuSOLVER gesvdaStridedBatched / cuBLAS GEMM / own kernel calls (lazy module loading,
// library start-up), whether a tiny warm-up call removes the first real call's cost, and the
// teardown (handles, pinned slabs, context). Prints one JSON object. Build and run:
//   nvcc -O2 -o /tmp/fc tools/device/first_calls.cu -lcusolver -lcublas && /tmp/fc [warmup]
// With the argument `warmup`, a 8x8 batch of 2 is solved before the 217x181 batch of 64.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "check.cuh"

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

__global__ void scale(float* data, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

struct Gesvda {
  int m, n, rank, batch;
  float *a = nullptr, *s = nullptr, *u = nullptr, *v = nullptr, *work = nullptr;
  int* info = nullptr;
  int lwork = 0;
};

// One gesvdaStridedBatched call (buffers allocated on first use), synchronised; returns ms.
static double run_gesvda(cusolverDnHandle_t solver, cudaStream_t stream, Gesvda& g) {
  const auto start = Clock::now();
  const long long sa = static_cast<long long>(g.m) * g.n, su = static_cast<long long>(g.m) * g.rank,
                  sv = static_cast<long long>(g.n) * g.rank;
  if (g.a == nullptr) {
    CHECK(cudaMalloc(&g.a, sizeof(float) * sa * g.batch));
    CHECK(cudaMalloc(&g.s, sizeof(float) * g.n * g.batch));  // strideS must be >= n
    CHECK(cudaMalloc(&g.u, sizeof(float) * su * g.batch));
    CHECK(cudaMalloc(&g.v, sizeof(float) * sv * g.batch));
    CHECK(cudaMalloc(&g.info, sizeof(int) * g.batch));
    std::vector<float> host(static_cast<size_t>(sa * g.batch));
    unsigned state = 12345;
    for (float& x : host) x = static_cast<float>((state = state * 1664525u + 1013904223u) >> 8) / 16777216.0f;
    CHECK(cudaMemcpy(g.a, host.data(), sizeof(float) * host.size(), cudaMemcpyHostToDevice));
    CHECK_STATUS(cusolverDnSgesvdaStridedBatched_bufferSize(solver, CUSOLVER_EIG_MODE_VECTOR, g.rank, g.m, g.n, g.a, g.m,
                                                            sa, g.s, g.n, g.u, g.m, su, g.v, g.n, sv, &g.lwork,
                                                            g.batch));
    CHECK(cudaMalloc(&g.work, sizeof(float) * (g.lwork > 0 ? g.lwork : 1)));
  }
  CHECK_STATUS(cusolverDnSgesvdaStridedBatched(solver, CUSOLVER_EIG_MODE_VECTOR, g.rank, g.m, g.n, g.a, g.m, sa, g.s,
                                               g.n, g.u, g.m, su, g.v, g.n, sv, g.work, g.lwork, g.info, nullptr,
                                               g.batch));
  CHECK(cudaStreamSynchronize(stream));
  return ms_since(start);
}

int main(int argc, char** argv) {
  const bool warmup = argc > 1 && std::strcmp(argv[1], "warmup") == 0;
  std::string json = "{";
  auto add = [&](const char* name, double ms) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s\"%s_ms\": %.2f", json.size() > 1 ? ", " : "", name, ms);
    json += buf;
  };
  auto t = Clock::now();
  CHECK(cudaFree(nullptr));
  add("context", ms_since(t));

  t = Clock::now();
  cudaStream_t streams[4];
  for (auto& s : streams) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  add("streams_4", ms_since(t));

  t = Clock::now();
  cusolverDnHandle_t solvers[4];
  for (int i = 0; i < 4; ++i) {
    CHECK_STATUS(cusolverDnCreate(&solvers[i]));
    CHECK_STATUS(cusolverDnSetStream(solvers[i], streams[i]));
  }
  add("cusolver_handles_4", ms_since(t));

  t = Clock::now();
  cublasHandle_t blas;
  CHECK_STATUS(cublasCreate(&blas));
  CHECK_STATUS(cublasSetStream(blas, streams[0]));
  add("cublas_handle", ms_since(t));

  t = Clock::now();
  float* buffer = nullptr;
  CHECK(cudaMalloc(&buffer, sizeof(float) * 1024));
  scale<<<4, 256, 0, streams[0]>>>(buffer, 1024, 2.0f);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(streams[0]));
  add("own_kernel_first", ms_since(t));

  if (warmup) {
    Gesvda tiny{8, 8, 4, 2};
    add("gesvda_warmup_8x8", run_gesvda(solvers[0], streams[0], tiny));
  }
  Gesvda real{217, 181, 50, 64};
  add("gesvda_217x181x64_first", run_gesvda(solvers[0], streams[0], real));
  add("gesvda_217x181x64_second", run_gesvda(solvers[0], streams[0], real));
  Gesvda other{217, 181, 50, 32};  // gesvda needs m >= n
  add("gesvda_other_handle_first", run_gesvda(solvers[1], streams[1], other));

  t = Clock::now();
  const float one = 1.0f, zero = 0.0f;
  CHECK_STATUS(cublasSgemmStridedBatched(blas, CUBLAS_OP_N, CUBLAS_OP_T, 217, 181, 50, &one, real.u, 217, 217 * 50,
                                         real.v, 181, 181 * 50, &zero, real.a, 217, 217 * 181, 64));
  CHECK(cudaStreamSynchronize(streams[0]));
  add("cublas_gemm_first", ms_since(t));

  t = Clock::now();
  void* pinned = nullptr;
  CHECK(cudaHostAlloc(&pinned, size_t{64} << 20, cudaHostAllocPortable));
  add("pinned_64mib_alloc", ms_since(t));
  t = Clock::now();
  CHECK(cudaFreeHost(pinned));
  add("pinned_64mib_free", ms_since(t));

  t = Clock::now();
  for (auto& s : solvers) CHECK_STATUS(cusolverDnDestroy(s));
  CHECK_STATUS(cublasDestroy(blas));
  add("handles_destroy", ms_since(t));
  t = Clock::now();
  for (auto& s : streams) CHECK(cudaStreamDestroy(s));
  CHECK(cudaDeviceReset());
  add("context_destroy", ms_since(t));
  std::printf("%s, \"warmup\": %s}\n", json.c_str(), warmup ? "true" : "false");
  return 0;
}
