// Rank-k reconstruction A_k = U_k diag(s_k) V_k^T on the GPU, four kernels for study:
// naive (one thread per output, loop over k), tiled (shared-memory tiles of U and V), register
// (shared tiles + each thread a TM x TN block of outputs in registers) and cublas (SGEMM with
// U_k diag(s) pre-scaled). All accumulate in float in component order l = 0..k-1.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

namespace imflow::cuda {

enum class ReconstructKernel { naive, tiled, register_blocked, cublas };

ReconstructKernel parse_reconstruct_kernel(const std::string& name);  // throws std::invalid_argument
const char* reconstruct_kernel_name(ReconstructKernel kernel);

// The factors in the layouts cuSOLVER leaves them (column-major): U is m x k (element (i, l) at
// u[i + l * ldu]), V is n x k (element (j, l) at v[j + l * ldv]), s has at least k values.
// out is the m x n row-major image: out[i * ldo + j] = sum_l u(i,l) * s[l] * v(j,l).
// The rank is read on the device from k_device (k <= k_max), so an energy rule decided on the
// device needs no host round trip; k_max bounds the loops and the cuBLAS GEMM.
struct ReconstructArgs {
  const float* u = nullptr;
  int ldu = 0;
  const float* s = nullptr;
  const float* v = nullptr;
  int ldv = 0;
  int m = 0, n = 0;
  const int* k_device = nullptr;
  int k_max = 0;
  float* out = nullptr;
  int ldo = 0;
  // Batches (cuda/svd_batched.hpp): `count` problems, problem b at these element offsets
  // (b * stride_*) of u, s, v, out and k_device; a stride 0 shares the array (e.g. s = ones).
  int count = 1;
  long long stride_u = 0, stride_s = 0, stride_v = 0, stride_out = 0;
  int stride_k = 0;
};

// Launch shape: naive uses block (bx, by); tiled uses a tile x tile block; register uses variant
// 0..register_variants()-1 (see register_variant_name). 0 means the default of each kernel.
struct ReconstructConfig {
  int bx = 0, by = 0;
  int tile = 0;
  int variant = -1;
};
int register_variants();
std::string register_variant_name(int variant);

// Enqueue on `stream`. `blas` (bound to `stream`) and `scratch` (>= count * m * k_max floats:
// the pre-scaled U) are needed for cublas only.
void reconstruct(ReconstructKernel kernel, const ReconstructArgs& args, cudaStream_t stream,
                 cublasHandle_t blas = nullptr, float* scratch = nullptr, const ReconstructConfig& config = {});

}  // namespace imflow::cuda
