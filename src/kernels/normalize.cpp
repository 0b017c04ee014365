// Min-max and z-score normalization (statistics in double over the finite pixels).
#include "imflow/kernels/normalize.hpp"

#include <cmath>
#include <limits>
#include <span>

namespace imflow::kernels {

Normalization normalize(ImageView image, NormalizeMethod method) {
  const int64_t count = image.size();
  float* data = image.data;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0.0;
  int64_t finite = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double x = data[i];
    if (!std::isfinite(x)) continue;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
    ++finite;
  }
  if (finite == 0) return {0.0, 1.0};
  Normalization mapping;
  if (method == NormalizeMethod::minmax) {
    mapping = {lo, hi - lo};
  } else {
    const double mean = sum / static_cast<double>(finite);
    double squares = 0.0;
    for (int64_t i = 0; i < count; ++i) {
      if (std::isfinite(data[i])) squares += (data[i] - mean) * (data[i] - mean);
    }
    mapping = {mean, std::sqrt(squares / static_cast<double>(finite))};
  }
  if (mapping.scale == 0.0) {
    for (int64_t i = 0; i < count; ++i) {
      if (std::isfinite(data[i])) data[i] = 0.0f;
    }
    return mapping;
  }
  for (int64_t i = 0; i < count; ++i) {  // divide (not multiply by 1/scale): as NumPy computes it
    if (std::isfinite(data[i])) data[i] = static_cast<float>((data[i] - mapping.offset) / mapping.scale);
  }
  return mapping;
}

int64_t zero_nonfinite(ImageView image) {
  int64_t zeroed = 0;
  for (float& x : std::span(image.data, static_cast<size_t>(image.size()))) {
    if (std::isfinite(x)) continue;
    x = 0.0f;
    ++zeroed;
  }
  return zeroed;
}

}  // namespace imflow::kernels
