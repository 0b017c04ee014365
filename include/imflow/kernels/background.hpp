// Kappa-sigma clipped background statistics (the seed lesson's definition), CPU kernel.
#pragma once
#include <cstdint>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

// Iterate: median and population std of the kept pixels; keep those strictly inside
// median +- kappa*std; stop when a pass clips nothing or after max_iters passes.
// NaN/Inf pixels are ignored. If std is 0 (constant image) or a pass would clip every pixel,
// the stats of that pass are final. With no finite pixel, median and std are NaN.
// `work` is scratch memory reused between calls.
BackgroundStats kappa_sigma_clip(ConstImageView image, double kappa, int max_iters, std::vector<float>& work);

// Median of values[0..n) as NumPy defines it (mean of the two middle values when n is even).
// Reorders the values.
double median_inplace(float* values, int64_t n);

}  // namespace imflow::kernels
