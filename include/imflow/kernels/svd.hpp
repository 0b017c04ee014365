// Thin SVD of one float32 slice through LAPACKE sgesdd (OpenBLAS, single-threaded per call),
// and the helpers of the svd_reconstruct step: the energy rule and the quality metrics.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/kernels/reconstruct.hpp"

namespace imflow::kernels {

// Make OpenBLAS single-threaded (openblas_set_num_threads(1)); called once before the first SVD.
// Many slices run in parallel on TBB threads; a multi-threaded BLAS inside each would oversubscribe.
void use_single_threaded_blas();

// SVD of the height x width row-major image `a` (m = height, n = width, r = min(m, n)).
// `work` receives [A copy | s | U | Vt]; the returned factors point into it. Throws
// std::runtime_error when LAPACK reports an error or does not converge. Values must be finite.
SvdFactors svd_thin(ConstImageView a, std::vector<float>& work);

// The reason a slice with `count` NaN/Inf pixels fails svd_reconstruct (CPU and GPU alike).
inline std::string nonfinite_pixels_reason(int64_t count) {
  return std::to_string(count) +
         " NaN/Inf pixels: the SVD needs finite values (normalize's `nonfinite: zero` sets them to 0)";
}

// Smallest k with sum_{l<k} s_l^2 >= energy * sum s^2 (sums in double); 0 when all s are 0.
int64_t rank_for_energy(const float* s, int64_t r, double energy);

struct ReconstructionMetrics {
  double rel_frobenius_error = 0.0;  // ||A - A_k||_F / ||A||_F (0 when A = 0)
  double psnr_db = 0.0;              // 10 log10(peak^2 / MSE), peak = max(A) - min(A); +inf when MSE = 0
  double energy_kept = 1.0;          // sum_{l<k} s_l^2 / sum s^2 (1 when A = 0)
  double compression_ratio = 0.0;    // k (m + n + 1) / (m n)
};

// Compare the original `a` with its reconstruction `ak` (same shape), all sums in double.
ReconstructionMetrics reconstruction_metrics(ConstImageView a, ConstImageView ak, const float* s, int64_t r,
                                             int64_t k);

}  // namespace imflow::kernels
