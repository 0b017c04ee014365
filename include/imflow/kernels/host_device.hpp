// IMFLOW_HOST_DEVICE: marks small inline functions compiled for both the host and CUDA kernels.
// IMFLOW_DEVICE_UNROLL: unrolls the loop after it in device code (host compilers ignore it).
#pragma once

#ifdef __CUDACC__
#define IMFLOW_HOST_DEVICE __host__ __device__
#else
#define IMFLOW_HOST_DEVICE
#endif

#ifdef __CUDA_ARCH__
#define IMFLOW_DEVICE_UNROLL _Pragma("unroll")
#else
#define IMFLOW_DEVICE_UNROLL
#endif
