// Threshold segmentation against the mesh background's maps (SEP's extract on data - bkg), CPU kernel.
#pragma once
#include <cstdint>

#include "imflow/image.hpp"
#include "imflow/kernels/background_mesh.hpp"

namespace imflow::kernels {

// mask = 1 where the pixel is finite and (double)pixel - back[i] > nsigma * (rms ? rms[i] : global_rms)
// (strict, float64), else 0. back and rms are laid out like the image; a null back is 0 (an image
// already background-subtracted). Returns the pixels set.
int64_t threshold_mask_local(ConstImageView image, const float* back, const float* rms, double nsigma,
                             double global_rms, uint8_t* mask);

// threshold_mask_local against the RMS map of `grid` (mesh_background's), each row of it
// evaluated (MeshRows) just before use instead of read from a whole map: the same mask.
int64_t threshold_mask_mesh_rms(ConstImageView image, const float* back, const MeshGrid& grid, double nsigma,
                                uint8_t* mask);

}  // namespace imflow::kernels
