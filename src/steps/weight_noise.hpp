// The per-pixel noise of an item with a weight map: the map's variances, rescaled to the image's
// measured background noise as SExtractor does (RESCALE_WEIGHTS), as the RMS map that `segment`
// (relative_to: rms_map), `measure` and the photometry read.
#pragma once
#include "imflow/kernels/background_mesh.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

// item.rms_map = sqrt(variance x factor^2) from item.weight_variance (+inf at bad pixels), the
// factor kernels::weight_scale's against `grid` (the mesh background of the item's detection
// image) when item.weight_rescale, else 1; the factor goes to the item's metrics (weight_scale).
void set_noise_from_weight_map(WorkItem& item, const kernels::MeshParams& params, const kernels::MeshGrid& grid);

}  // namespace imflow
