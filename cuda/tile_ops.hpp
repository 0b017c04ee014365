// The device side of a tile item (docs/tiling.md): the whole image's background statistics put
// into the slot's results (instead of running the background kernel on one tile), and the mask
// cut to the tile's core before labelling.
#pragma once
#include "cuda/gpu_context.hpp"
#include "imflow/source.hpp"
#include "imflow/tile_rect.hpp"

namespace imflow::cuda {

// Write `stats` into gpu.results as the background kernel would; sets gpu.has_background.
void set_background(GpuContext& gpu, const BackgroundStats& stats);

// Zero gpu.mask outside `core` (coordinates within the item's gpu.width x gpu.height buffer).
void clear_mask_outside(GpuContext& gpu, const TileRect& core);

}  // namespace imflow::cuda
