// IMFLOW_HOST_DEVICE: marks small inline functions compiled for both the host and CUDA kernels.
#pragma once

#ifdef __CUDACC__
#define IMFLOW_HOST_DEVICE __host__ __device__
#else
#define IMFLOW_HOST_DEVICE
#endif
