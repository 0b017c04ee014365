// Kappa-sigma clipped background statistics on the CPU (see include/imflow/kernels/background.hpp).
#include "imflow/kernels/background.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace imflow::kernels {

double median_inplace(float* values, int64_t n) {
  if (n <= 0) return std::numeric_limits<double>::quiet_NaN();
  float* middle = values + n / 2;
  std::nth_element(values, middle, values + n);
  const double upper = *middle;
  if (n % 2 == 1) return upper;
  const double lower = *std::max_element(values, middle);
  return (lower + upper) / 2.0;
}

namespace {
// Population standard deviation, two passes in float64.
double population_std(const float* values, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += values[i];
  const double mean = sum / static_cast<double>(n);
  double squares = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = values[i] - mean;
    squares += d * d;
  }
  return std::sqrt(squares / static_cast<double>(n));
}
}  // namespace

BackgroundStats kappa_sigma_clip(ConstImageView image, double kappa, int max_iters, std::vector<float>& work) {
  work.clear();
  work.reserve(static_cast<size_t>(image.size()));
  for (int64_t i = 0; i < image.size(); ++i) {
    if (std::isfinite(image.data[i])) work.push_back(image.data[i]);
  }
  BackgroundStats stats;
  stats.valid = static_cast<int64_t>(work.size());
  int64_t n = stats.valid;
  if (n == 0) {
    stats.median = stats.std = std::numeric_limits<double>::quiet_NaN();
    return stats;
  }
  while (true) {
    ++stats.iterations;
    stats.kept = n;
    stats.median = median_inplace(work.data(), n);
    stats.std = population_std(work.data(), n);
    if (stats.std == 0.0 || stats.iterations >= max_iters) break;
    const double low = stats.median - kappa * stats.std;
    const double high = stats.median + kappa * stats.std;
    const auto end = std::remove_if(work.begin(), work.begin() + n, [&](float v) {
      const double value = v;
      return !(value > low && value < high);
    });
    const int64_t kept = end - work.begin();
    if (kept == n || kept == 0) break;
    n = kept;
  }
  return stats;
}

}  // namespace imflow::kernels
