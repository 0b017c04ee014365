// SEP's background-statistics constants (sepcore.h, back.c) and backhisto's histogram scale,
// shared by the mesh estimates, the background map and the weight map's rescaling.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace imflow::kernels::backstat {

inline constexpr double kBig = 1e30;             // SEP's BIG: values at or below -BIG are not pixels
inline constexpr double kMinGoodFraction = 0.5;  // BACK_MINGOODFRAC
inline constexpr int kHistogramSigmas = 5;       // QUANTIF_NSIGMA
inline constexpr int64_t kMaxLevels = 4096;      // QUANTIF_NMAXLEVELS
inline constexpr int kModePixels = 4;            // QUANTIF_AMIN
inline constexpr double kPi = 3.1415926535898;   // SEP's PI (sepcore.h), not M_PI

// backhisto's histogram scale for `n` clipped values of this mean and sigma: nlevels bins from
// qzero, qscale wide; a value's bin is (int)(v / qscale + cste), in float as SEP computes it.
struct Quantisation {
  int64_t nlevels = 1;
  float qscale = 1.0f, qzero = 0.0f, cste = 0.0f;
  Quantisation(double mean, double sigma, int64_t n) {
    const double step = std::sqrt(2.0 / kPi) * kHistogramSigmas / kModePixels;
    nlevels = std::min<int64_t>(static_cast<int>(step * static_cast<double>(n) + 1), kMaxLevels);
    qscale = sigma > 0.0 ? static_cast<float>(2 * kHistogramSigmas * sigma / static_cast<double>(nlevels)) : 1.0f;
    qzero = static_cast<float>(mean - kHistogramSigmas * sigma);
    cste = static_cast<float>(0.499999 - static_cast<double>(qzero / qscale));
  }
};

}  // namespace imflow::kernels::backstat
