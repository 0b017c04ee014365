// Batched one-sided Jacobi SVD (Hestenes) of many same-shape small images: one thread block per
// image, the working matrix in shared memory when it fits (else global memory), parallel
// round-robin pair ordering, dot products accumulated in double, singular values sorted.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

namespace imflow::cuda {

// The images are row-major m x n (stride m * n). The SVD is taken of the tall orientation
// D (rows M = max(m, n), columns N = min(m, n)): D = A when m >= n, D = A^T otherwise, so
// D = Q diag(s) W^T with Q M x N. Outputs per image b:
//   q + b * M * k_out: the first k_out columns of Q (column-major, ld M; a zero singular value
//                     gives a zero column), i.e. A's U when m >= n and A's V when m < n;
//   s + b * N:         all N singular values, descending;
//   info[b]:           0 converged, > 0 not converged after that many sweeps.
// Non-finite pixels are read as 0 (the metrics kernels report them and fail the item).
struct JacobiBatchArgs {
  const float* images = nullptr;
  int m = 0, n = 0, count = 0;
  int k_out = 0;
  float* q = nullptr;
  float* s = nullptr;
  int* info = nullptr;
  float* global_work = nullptr;  // count * M * N floats when jacobi_needs_global_work(), else unused
  int max_sweeps = 60;
  // When set, only the images b with redo_only[b] != 0 are solved (the others' outputs are left
  // untouched): the fallback for the images another solver reported as not converged.
  const int* redo_only = nullptr;
};

// Whether the working matrix does not fit in `max_shared_optin` bytes of shared memory.
bool jacobi_needs_global_work(int m, int n, size_t max_shared_optin);

// Enqueue on `stream` (throws imflow::cuda::CudaError on launch errors). Never synchronizes.
void jacobi_svd_batched(const JacobiBatchArgs& args, size_t max_shared_optin, cudaStream_t stream);

}  // namespace imflow::cuda
