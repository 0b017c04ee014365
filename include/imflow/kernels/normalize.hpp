// Intensity normalization of one slice, CPU kernel: min-max to [0, 1] or z-score.
#pragma once
#include "imflow/image.hpp"
#include "imflow/work_item.hpp"

namespace imflow::kernels {

enum class NormalizeMethod { minmax, zscore };

// minmax: x' = (x - min) / (max - min); zscore: x' = (x - mean) / std (population std, ddof 0).
// Statistics use the finite pixels only (NaN/Inf are ignored and stay non-finite). A constant
// image (range or std 0) becomes all zeros. Returns the mapping to undo it:
// x = x' * scale + offset (scale 0 for a constant image, {0, 1} when no pixel is finite).
Normalization normalize(ImageView image, NormalizeMethod method);

// normalize's `nonfinite: zero`: sets the NaN/Inf pixels to 0 (after normalize: the minimum for
// minmax, the mean for zscore) so that steps needing finite values (svd_reconstruct) take masked
// images. Returns how many pixels it set.
int64_t zero_nonfinite(ImageView image);

}  // namespace imflow::kernels
