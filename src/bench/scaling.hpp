// Scaling analysis for `imflow bench`: medians, speedup against a baseline point, Amdahl's serial
// fraction (least squares) with Karp-Flatt per point, and Gustafson's scaled speedup.
#pragma once
#include <vector>

namespace imflow::bench {

struct Spread {
  double median = 0, min = 0, max = 0;
};
// Median (mean of the two middle values for an even count), min and max; zeros when empty.
Spread spread(std::vector<double> values);

// Karp-Flatt experimentally determined serial fraction for speedup S on N workers (N > 1):
// e = (1/S - 1/N) / (1 - 1/N).
double karp_flatt(double speedup, double workers);

// Amdahl fit: 1/S = f + (1 - f)/N, i.e. (1/S - 1/N) = f (1 - 1/N); f by least squares through
// the origin (the baseline N = 1, S = 1 holds exactly). `workers` are relative to the baseline.
struct AmdahlFit {
  double serial_fraction = 0;  // f; can be < 0 for super-linear speedups
  double max_speedup = 0;      // 1/f (0 when f <= 0: unbounded)
  double rms_residual = 0;     // RMS of 1/S - model over the points
  int points = 0;              // points with N > 1 that entered the fit
};
AmdahlFit fit_amdahl(const std::vector<double>& workers, const std::vector<double>& speedups);
double amdahl_speedup(double serial_fraction, double workers);

// Gustafson: scaled speedup S = N - s (N - 1); s by least squares on (N - S) = s (N - 1).
struct GustafsonFit {
  double serial_fraction = 0;
  int points = 0;
};
GustafsonFit fit_gustafson(const std::vector<double>& workers, const std::vector<double>& scaled_speedups);

}  // namespace imflow::bench
