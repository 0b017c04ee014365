// Threshold segmentation against the mesh background's maps (SEP's extract on data - bkg), CPU kernel.
#pragma once
#include <cstdint>

#include "imflow/image.hpp"

namespace imflow::kernels {

// mask = 1 where the pixel is finite and (double)pixel - back[i] > nsigma * (rms ? rms[i] : global_rms)
// (strict, float64), else 0. back and rms are laid out like the image. Returns the pixels set.
int64_t threshold_mask_local(ConstImageView image, const float* back, const float* rms, double nsigma,
                             double global_rms, uint8_t* mask);

}  // namespace imflow::kernels
