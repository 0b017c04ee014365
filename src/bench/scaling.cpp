// Scaling analysis: spreads, Karp-Flatt, least-squares Amdahl and Gustafson serial fractions.
#include "bench/scaling.hpp"

#include <algorithm>
#include <cmath>

namespace imflow::bench {

Spread spread(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double median = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  return {median, values.front(), values.back()};
}

double karp_flatt(double speedup, double workers) {
  if (workers <= 1 || speedup <= 0) return 0.0;
  return (1.0 / speedup - 1.0 / workers) / (1.0 - 1.0 / workers);
}

double amdahl_speedup(double serial_fraction, double workers) {
  return 1.0 / (serial_fraction + (1.0 - serial_fraction) / workers);
}

AmdahlFit fit_amdahl(const std::vector<double>& workers, const std::vector<double>& speedups) {
  AmdahlFit fit;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < workers.size() && i < speedups.size(); ++i) {
    if (workers[i] <= 1 || speedups[i] <= 0) continue;
    const double x = 1.0 - 1.0 / workers[i];
    const double y = 1.0 / speedups[i] - 1.0 / workers[i];
    sxy += x * y;
    sxx += x * x;
    ++fit.points;
  }
  if (fit.points == 0) return fit;
  fit.serial_fraction = sxy / sxx;
  fit.max_speedup = fit.serial_fraction > 0 ? 1.0 / fit.serial_fraction : 0.0;
  double squares = 0;
  for (size_t i = 0; i < workers.size() && i < speedups.size(); ++i) {
    if (workers[i] <= 1 || speedups[i] <= 0) continue;
    const double residual = 1.0 / speedups[i] - 1.0 / amdahl_speedup(fit.serial_fraction, workers[i]);
    squares += residual * residual;
  }
  fit.rms_residual = std::sqrt(squares / fit.points);
  return fit;
}

GustafsonFit fit_gustafson(const std::vector<double>& workers, const std::vector<double>& scaled_speedups) {
  GustafsonFit fit;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < workers.size() && i < scaled_speedups.size(); ++i) {
    if (workers[i] <= 1) continue;
    const double x = workers[i] - 1.0;
    sxy += x * (workers[i] - scaled_speedups[i]);
    sxx += x * x;
    ++fit.points;
  }
  if (fit.points > 0) fit.serial_fraction = sxy / sxx;
  return fit;
}

}  // namespace imflow::bench
