// SExtractor's rescaling of a variance or weight map to the image's measured noise (makeback in
// its back.c, RESCALE_WEIGHTS Y), CPU kernel.
#pragma once
#include <cstdint>

#include "imflow/image.hpp"
#include "imflow/kernels/background_mesh.hpp"

namespace imflow::kernels {

struct WeightScale {
  float factor = 1.0f;  // SExtractor's sigfac: variances are multiplied by factor^2
  int64_t meshes = 0;   // meshes whose ratio entered the median (0: none, factor 1)
};

// `variance`: the map's variances before rescaling (laid out like `image`; +inf at bad pixels,
// whose image pixels are NaN). `grid`: the image's mesh grid (mesh_grid, filtered). Per mesh, as
// SExtractor's backstat/backhisto/backguess do for the weight map beside the image: the pixels
// both usable, mean +- 2 sigma cuts of the image and of the variances, the variances of the
// pixels inside both cuts give the histogram's scale, the histogram counts the variances of the
// pixels whose image value falls in the image's histogram, and its clipped mode is the mesh's
// variance. The variance grid is filled and median-filtered as the image's; factor = median over
// meshes of grid.sigma / sqrt(variance mode) (positive ratios only).
WeightScale weight_scale(ConstImageView image, const float* variance, const MeshParams& params, const MeshGrid& grid);

}  // namespace imflow::kernels
