// Rank-k reconstruction kernels: naive (three loops) and blocked (row x column x component tiles).
#include "imflow/kernels/reconstruct.hpp"

#include <algorithm>

namespace imflow::kernels {

void reconstruct_naive(const SvdFactors& f, int64_t k, float* out, int64_t ldo) {
  for (int64_t i = 0; i < f.m; ++i) {
    for (int64_t j = 0; j < f.n; ++j) {
      float acc = 0.0f;
      for (int64_t l = 0; l < k; ++l) acc += f.u[i * f.ldu + l] * f.s[l] * f.vt[l * f.ldvt + j];
      out[i * ldo + j] = acc;
    }
  }
}

void reconstruct_blocked(const SvdFactors& f, int64_t k, float* out, int64_t ldo) {
  // A tile of out (kRows x kCols floats, 64 KiB) stays in L2 while kComps rows of Vt stream by;
  // the innermost loop runs along a row of out and of Vt (contiguous, vectorised).
  constexpr int64_t kRows = 32, kCols = 512, kComps = 64;
  for (int64_t i0 = 0; i0 < f.m; i0 += kRows) {
    const int64_t i1 = std::min(f.m, i0 + kRows);
    for (int64_t j0 = 0; j0 < f.n; j0 += kCols) {
      const int64_t j1 = std::min(f.n, j0 + kCols);
      for (int64_t i = i0; i < i1; ++i) std::fill(out + i * ldo + j0, out + i * ldo + j1, 0.0f);
      for (int64_t l0 = 0; l0 < k; l0 += kComps) {
        const int64_t l1 = std::min(k, l0 + kComps);
        for (int64_t i = i0; i < i1; ++i) {
          float* o = out + i * ldo;
          for (int64_t l = l0; l < l1; ++l) {
            const float us = f.u[i * f.ldu + l] * f.s[l];
            const float* v = f.vt + l * f.ldvt;
            for (int64_t j = j0; j < j1; ++j) o[j] += us * v[j];
          }
        }
      }
    }
  }
}

}  // namespace imflow::kernels
