// SEP's background-statistics constants (sepcore.h, back.c), shared by the mesh estimates, the
// background map and the weight map's rescaling.
#pragma once
#include <cstdint>

namespace imflow::kernels::backstat {

inline constexpr double kBig = 1e30;             // SEP's BIG: values at or below -BIG are not pixels
inline constexpr double kMinGoodFraction = 0.5;  // BACK_MINGOODFRAC
inline constexpr int kHistogramSigmas = 5;       // QUANTIF_NSIGMA
inline constexpr int64_t kMaxLevels = 4096;      // QUANTIF_NMAXLEVELS
inline constexpr int kModePixels = 4;            // QUANTIF_AMIN
inline constexpr double kPi = 3.1415926535898;   // SEP's PI (sepcore.h), not M_PI

}  // namespace imflow::kernels::backstat
