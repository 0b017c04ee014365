// Thin SVD through LAPACKE sgesdd (single-threaded OpenBLAS per call), the energy rule, metrics.
#include "imflow/kernels/svd.hpp"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>

extern "C" void openblas_set_num_threads(int threads);  // OpenBLAS (cblas.h), linked directly

namespace imflow::kernels {

void use_single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

SvdFactors svd_thin(ConstImageView a, std::vector<float>& work) {
  const int64_t m = a.height, n = a.width, r = std::min(m, n);
  if (m <= 0 || n <= 0) throw std::runtime_error("SVD of an empty image");
  if (m * n > std::numeric_limits<lapack_int>::max()) throw std::runtime_error("image too large for 32-bit LAPACK");
  use_single_threaded_blas();
  work.resize(static_cast<size_t>(m * n + r + m * r + r * n));
  float* copy = work.data();
  float* s = copy + m * n;
  float* u = s + r;       // m x r row-major (LAPACK's Vt of A^T)
  float* vt = u + m * r;  // r x n row-major (LAPACK's U of A^T)
  std::copy(a.data, a.data + m * n, copy);
  // The row-major m x n image is the column-major n x m matrix A^T = V S U^T: LAPACK's U is our
  // V (column-major n x r = row-major Vt), its Vt is our U^T (column-major r x m = row-major U).
  const lapack_int info = LAPACKE_sgesdd(LAPACK_COL_MAJOR, 'S', static_cast<lapack_int>(n), static_cast<lapack_int>(m),
                                         copy, static_cast<lapack_int>(n), s, vt, static_cast<lapack_int>(n), u,
                                         static_cast<lapack_int>(r));
  if (info > 0) throw std::runtime_error("sgesdd did not converge (info " + std::to_string(info) + ")");
  if (info < 0) throw std::runtime_error("sgesdd: invalid argument " + std::to_string(-info));
  return {u, r, s, vt, n, m, n, r};
}

int64_t rank_for_energy(const float* s, int64_t r, double energy) {
  double total = 0.0;
  for (int64_t l = 0; l < r; ++l) total += static_cast<double>(s[l]) * s[l];
  if (total == 0.0) return 0;
  double kept = 0.0;
  for (int64_t l = 0; l < r; ++l) {
    kept += static_cast<double>(s[l]) * s[l];
    if (kept >= energy * total) return l + 1;
  }
  return r;
}

ReconstructionMetrics reconstruction_metrics(ConstImageView a, ConstImageView ak, const float* s, int64_t r,
                                             int64_t k) {
  ReconstructionMetrics metrics;
  double diff2 = 0.0, norm2 = 0.0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int64_t i = 0; i < a.size(); ++i) {
    const double x = a.data[i], d = x - static_cast<double>(ak.data[i]);
    diff2 += d * d;
    norm2 += x * x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const double m = static_cast<double>(a.height), n = static_cast<double>(a.width);
  metrics.rel_frobenius_error = norm2 > 0.0 ? std::sqrt(diff2 / norm2) : 0.0;
  const double mse = diff2 / (m * n);
  double peak = hi - lo;
  if (peak == 0.0) peak = std::max(std::abs(hi), std::abs(lo));  // constant slice
  metrics.psnr_db = mse > 0.0 ? 10.0 * std::log10(peak * peak / mse) : std::numeric_limits<double>::infinity();
  double total = 0.0, kept = 0.0;
  for (int64_t l = 0; l < r; ++l) {
    total += static_cast<double>(s[l]) * s[l];
    if (l < k) kept += static_cast<double>(s[l]) * s[l];
  }
  metrics.energy_kept = total > 0.0 ? kept / total : 1.0;
  metrics.compression_ratio = static_cast<double>(k) * (m + n + 1.0) / (m * n);
  return metrics;
}

}  // namespace imflow::kernels
