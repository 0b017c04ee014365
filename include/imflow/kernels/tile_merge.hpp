// Joining the labels of tiles into the sources of the whole image: each tile is labelled on its
// own; labels that touch across a tile border (4- or 8-connected) are one source (union-find),
// their partial sums merge, and sources are numbered in raster order of their first pixel, as
// scipy.ndimage.label numbers the whole image (docs/tiling.md).
#pragma once
#include <cstdint>
#include <vector>

#include "imflow/kernels/source_sums.hpp"
#include "imflow/source.hpp"
#include "imflow/tile_rect.hpp"

namespace imflow::kernels {

// What the merge needs of one labelled tile.
struct TileLabels {
  TileRect core;                     // the whole-image pixels the tile owns
  int32_t nlabels = 0;               // local labels 1..nlabels
  std::vector<int64_t> first;        // per local label: y * image_width + x of its first pixel (raster order)
  std::vector<int32_t> top, bottom;  // local labels along the core's first and last rows (core.width each)
  std::vector<int32_t> left, right;  // along its first and last columns (core.height each)
  std::vector<SourceSums> sums;      // per local label, in image coordinates; empty when not measured
  // Beside `sums`, the sums of the filtered detection image less its background, when the
  // positions and shapes come from it (a detection filter after the background); else empty.
  std::vector<SourceSums> shape_sums;
};

// Describe a tile from its label map. `labels` covers `labels_rect` (rows labels_rect.width
// apart); its non-zero labels (1..nlabels) lie inside `core`, which lies inside labels_rect.
void describe_tile_labels(const int32_t* labels, const TileRect& labels_rect, const TileRect& core, int32_t nlabels,
                          int64_t image_width, TileLabels& tile);

struct MergedSources {
  int32_t count = 0;                           // sources in the image
  std::vector<std::vector<int32_t>> final_id;  // per tile: [local label - 1] -> source id (1..count)
  std::vector<SourceSums> sums;                // per source id - 1 (empty when the tiles carry no sums)
  Catalog catalog;                             // merge_tile_catalog only: finish_sources(sums), sums left empty
};

// Merge the tiles of a columns x rows grid, given in raster order of the grid. Partial sums are
// merged in tile order, so the result does not depend on the order tiles finished in (nor on the
// threads: sources are merged in parallel, each by one thread). Each tile's sums are released
// once merged (the labels, borders and first pixels are kept).
MergedSources merge_tile_labels(std::vector<TileLabels>& tiles, int64_t columns, int64_t rows, int connectivity);

// The same, with the catalog instead of the merged sums: each source's sums are folded and
// finished in one pass, equal to finish_sources(merge_tile_labels(...).sums, width, height)
// without holding both. (width, height): the whole image's size. Empty when the tiles carry no sums.
MergedSources merge_tile_catalog(std::vector<TileLabels>& tiles, int64_t columns, int64_t rows, int connectivity,
                                 int64_t width, int64_t height);

}  // namespace imflow::kernels
