// Rank-k reconstruction A_k = U_k * diag(s_k) * V_k^T of one slice, CPU kernels: a naive
// three-loop reference and a cache-blocked version (the CUDA kernel mirrors the blocked one).
#pragma once
#include <cstdint>

namespace imflow::kernels {

// The thin SVD factors of an m x n row-major matrix, as svd_thin() leaves them.
struct SvdFactors {
  const float* u = nullptr;   // m x r, row-major, row stride ldu (>= r)
  int64_t ldu = 0;
  const float* s = nullptr;   // r singular values, descending
  const float* vt = nullptr;  // r x n, row-major, row stride ldvt (>= n)
  int64_t ldvt = 0;
  int64_t m = 0, n = 0, r = 0;
};

// out[i*ldo + j] = sum_{l<k} u[i,l] * s[l] * vt[l,j] for 0 <= i < m, 0 <= j < n, accumulated in
// float in order l = 0..k-1. Requires 0 <= k <= r. k == 0 writes zeros.
void reconstruct_naive(const SvdFactors& f, int64_t k, float* out, int64_t ldo);

// Same result (to float rounding: each output is accumulated in the same l order) computed in
// tiles of rows x columns x components, with s folded into a tile of U.
void reconstruct_blocked(const SvdFactors& f, int64_t k, float* out, int64_t ldo);

}  // namespace imflow::kernels
