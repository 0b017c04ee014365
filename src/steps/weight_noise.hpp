// The per-pixel noise of an image with a weight map: the map's variances, rescaled to the image's
// measured background noise as SExtractor does (RESCALE_WEIGHTS), as the RMS map that `segment`
// (relative_to: rms_map), `measure` and the photometry read.
#pragma once
#include <string>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/kernels/background_mesh.hpp"

namespace imflow {

// rms = sqrt(variance x factor^2) from `variance` (a weight map's, +inf at bad pixels), the factor
// kernels::weight_scale's of `variance` against `grid` (the mesh background of `image`) when
// `rescale`, else 1. Returns the factor; when no mesh could give one, a warning naming `role`
// ("weight map") goes to `warnings` and the factor is 1.
float weight_rms_map(ConstImageView image, const std::vector<float>& variance, bool rescale,
                     const kernels::MeshParams& params, const kernels::MeshGrid& grid, std::vector<float>& rms,
                     const std::string& role, std::vector<std::string>& warnings);

// The warning when a weight map could not be rescaled (the CPU's and the GPU's).
std::string weight_not_rescaled_warning(const std::string& role);

}  // namespace imflow
