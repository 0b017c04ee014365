// The error check shared by the standalone device tools (tools/device/*.cu): print the failed
// call with file and line and the CUDA error string, then exit 1.
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                               \
  do {                                                                                            \
    cudaError_t e = (call);                                                                       \
    if (e != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

// For library status codes (cuSOLVER, cuBLAS): 0 is success.
#define CHECK_STATUS(call)                                                                \
  do {                                                                                    \
    int status_ = static_cast<int>(call);                                                 \
    if (status_ != 0) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: status %d\n", __FILE__, __LINE__, #call, status_); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)
