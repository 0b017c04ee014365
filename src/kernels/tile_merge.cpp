// Tile label merging: border extraction, union-find over (tile, local label), raster numbering.
#include "imflow/kernels/tile_merge.hpp"

#include "imflow/kernels/dual_image.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace imflow::kernels {

void describe_tile_labels(const int32_t* labels, const TileRect& labels_rect, const TileRect& core, int32_t nlabels,
                          int64_t image_width, TileLabels& tile) {
  tile.core = core;
  tile.nlabels = nlabels;
  tile.first.assign(static_cast<size_t>(nlabels), -1);
  const int64_t stride = labels_rect.width;
  auto at = [&](int64_t x, int64_t y) { return labels[(y - labels_rect.y) * stride + (x - labels_rect.x)]; };
  for (int64_t y = core.y; y < core.y_end(); ++y) {
    for (int64_t x = core.x; x < core.x_end(); ++x) {
      const int32_t label = at(x, y);
      if (label <= 0) continue;
      if (label > nlabels) throw std::logic_error("tile label " + std::to_string(label) + " exceeds its count");
      int64_t& first = tile.first[static_cast<size_t>(label - 1)];
      if (first < 0) first = y * image_width + x;
    }
  }
  tile.top.resize(static_cast<size_t>(core.width));
  tile.bottom.resize(static_cast<size_t>(core.width));
  for (int64_t x = 0; x < core.width; ++x) {
    tile.top[static_cast<size_t>(x)] = at(core.x + x, core.y);
    tile.bottom[static_cast<size_t>(x)] = at(core.x + x, core.y_end() - 1);
  }
  tile.left.resize(static_cast<size_t>(core.height));
  tile.right.resize(static_cast<size_t>(core.height));
  for (int64_t y = 0; y < core.height; ++y) {
    tile.left[static_cast<size_t>(y)] = at(core.x, core.y + y);
    tile.right[static_cast<size_t>(y)] = at(core.x_end() - 1, core.y + y);
  }
}

namespace {
// Union-find over (tile, label) nodes. unite() makes the smaller root the parent, so every
// parent is <= its node and a set's root is its first node (in tile order, then label order).
class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), size_t{0}); }
  size_t find(size_t i) {
    while (parent_[i] != i) {
      parent_[i] = parent_[parent_[i]];
      i = parent_[i];
    }
    return i;
  }
  void unite(size_t a, size_t b) {
    a = find(a);
    b = find(b);
    if (a < b) parent_[b] = a;
    else if (b < a) parent_[a] = b;
  }
  // Every node's root, in one ascending pass (a parent precedes its node); consumes the sets.
  std::vector<size_t> take_roots() {
    for (size_t i = 0; i < parent_.size(); ++i) parent_[i] = parent_[parent_[i]];
    return std::move(parent_);
  }

 private:
  std::vector<size_t> parent_;
};

// Join the labels that touch across the borders between neighbouring tiles.
void join_borders(const std::vector<TileLabels>& tiles, const std::vector<size_t>& base, int64_t columns, int64_t rows,
                  bool diagonal, UnionFind& sets) {
  auto join = [&](size_t ta, int32_t a, size_t tb, int32_t b) {
    if (a > 0 && b > 0) sets.unite(base[ta] + static_cast<size_t>(a - 1), base[tb] + static_cast<size_t>(b - 1));
  };
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t column = 0; column < columns; ++column) {
      const size_t t = static_cast<size_t>(row * columns + column);
      const TileLabels& here = tiles[t];
      if (column + 1 < columns) {  // the tile to the right: same rows
        const size_t r = t + 1;
        const auto& a = here.right;
        const auto& b = tiles[r].left;
        for (size_t y = 0; y < a.size(); ++y) {
          join(t, a[y], r, b[y]);
          if (diagonal && y + 1 < a.size()) {
            join(t, a[y], r, b[y + 1]);
            join(t, a[y + 1], r, b[y]);
          }
        }
      }
      if (row + 1 < rows) {  // the tile below: same columns
        const size_t d = t + static_cast<size_t>(columns);
        const auto& a = here.bottom;
        const auto& b = tiles[d].top;
        for (size_t x = 0; x < a.size(); ++x) {
          join(t, a[x], d, b[x]);
          if (diagonal && x + 1 < a.size()) {
            join(t, a[x], d, b[x + 1]);
            join(t, a[x + 1], d, b[x]);
          }
        }
        if (diagonal && column + 1 < columns) {  // across the corner: bottom-right to top-left
          join(t, here.bottom.back(), d + 1, tiles[d + 1].top.front());
        }
        if (diagonal && column > 0) {  // bottom-left to the top-right of the tile below-left
          join(t, here.bottom.front(), d - 1, tiles[d - 1].top.back());
        }
      }
    }
  }
}

// A (tile, local label) pair: one part of a source.
struct Part {
  uint32_t tile;
  int32_t label;  // 1..nlabels
};

// After the groups are known: their first pixels, the source ids (raster order of first pixel),
// each tile's final ids and, with sums, each source's parts folded (waits for `allocation`).
void number_and_fold(std::vector<TileLabels>& tiles, const std::vector<size_t>& base, std::vector<size_t> group_of_node,
                     size_t groups, const std::pair<int64_t, int64_t>* catalog_size, bool with_sums,
                     tbb::task_group& allocation, MergedSources& merged) {
  const size_t nodes = group_of_node.size();
  // Each group's first pixel (smallest raster index over its parts), and its number of parts.
  std::vector<std::pair<int64_t, size_t>> first_of_group(groups, {std::numeric_limits<int64_t>::max(), 0});
  std::vector<size_t> part_offset(groups + 1, 0);
  for (size_t t = 0; t < tiles.size(); ++t) {
    const size_t* group = group_of_node.data() + base[t];
    for (size_t l = 0; l < static_cast<size_t>(tiles[t].nlabels); ++l) {
      auto& first = first_of_group[group[l]];
      first.first = std::min(first.first, tiles[t].first[l]);
      first.second = group[l];
      ++part_offset[group[l] + 1];
    }
  }
  // Source ids: groups in raster order of their first pixel (scipy.ndimage.label's order for the
  // whole image). First pixels are distinct, so the order does not depend on the sort.
  tbb::this_task_arena::isolate([&] { tbb::parallel_sort(first_of_group.begin(), first_of_group.end()); });
  std::vector<int32_t> id_of_group(groups);
  for (size_t rank = 0; rank < groups; ++rank) {
    id_of_group[first_of_group[rank].second] = static_cast<int32_t>(rank + 1);
  }

  merged.final_id.resize(tiles.size());
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(size_t{0}, tiles.size(), [&](size_t t) {
      auto& ids = merged.final_id[t];
      ids.resize(static_cast<size_t>(tiles[t].nlabels));
      const size_t* group = group_of_node.data() + base[t];
      for (size_t l = 0; l < ids.size(); ++l) ids[l] = id_of_group[group[l]];
    });
  });
  if (!with_sums) return;

  // Each source's parts, in tile order then label order (the order the sums are folded in, so
  // the result does not depend on threads or on the order tiles finished in).
  for (size_t g = 0; g < groups; ++g) part_offset[g + 1] += part_offset[g];
  std::vector<Part> parts(nodes);
  {
    std::vector<size_t> cursor(part_offset.begin(), part_offset.end() - 1);
    for (size_t t = 0; t < tiles.size(); ++t) {
      const size_t* group = group_of_node.data() + base[t];
      for (int32_t l = 1; l <= tiles[t].nlabels; ++l) parts[cursor[group[l - 1]]++] = {static_cast<uint32_t>(t), l};
    }
  }
  std::vector<size_t>().swap(group_of_node);
  // The same fold (and finish) as one source at a time, whatever the threads.
  auto fold = [&](size_t g, std::vector<SourceSums> TileLabels::*which) {
    SourceSums sums;
    for (size_t p = part_offset[g]; p < part_offset[g + 1]; ++p) {
      const auto& tile_sums = tiles[parts[p].tile].*which;
      if (!tile_sums.empty()) sums.merge(tile_sums[static_cast<size_t>(parts[p].label - 1)]);
    }
    return sums;
  };
  // With shape sums (a detection filter after the background): the row is the filtered image's,
  // its fluxes and peak the image's, as the measure step merges its two passes.
  const bool with_shapes = std::any_of(tiles.begin(), tiles.end(), [](const TileLabels& t) { return !t.shape_sums.empty(); });
  auto finish = [&](size_t g, int32_t id, int64_t width, int64_t height) {
    Source row = fold(g, &TileLabels::sums).finish(id, width, height);
    if (!with_shapes) return row;
    Source shapes = fold(g, &TileLabels::shape_sums).finish(id, width, height);
    take_measured_fluxes(shapes, row);
    return shapes;
  };
  allocation.wait();
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, groups, 1024), [&](const tbb::blocked_range<size_t>& ranks) {
      for (size_t rank = ranks.begin(); rank < ranks.end(); ++rank) {
        const size_t g = first_of_group[rank].second;
        if (catalog_size == nullptr) {
          merged.sums[rank] = fold(g, &TileLabels::sums);
        } else {
          const auto [width, height] = *catalog_size;
          merged.catalog[rank] = finish(g, static_cast<int32_t>(rank + 1), width, height);
        }
      }
    });
  });
  for (auto& tile : tiles) {  // merged: free them (a mosaic has millions)
    std::vector<SourceSums>().swap(tile.sums);
    std::vector<SourceSums>().swap(tile.shape_sums);
  }
}

// The merge; with `catalog_size` (the whole image's width and height), the sums of each source
// are folded and finished into merged.catalog at once, and merged.sums stays empty.
MergedSources merge(std::vector<TileLabels>& tiles, int64_t columns, int64_t rows, int connectivity,
                    const std::pair<int64_t, int64_t>* catalog_size) {
  if (static_cast<int64_t>(tiles.size()) != columns * rows) throw std::invalid_argument("merge_tile_labels: grid size");
  if (connectivity != 4 && connectivity != 8) throw std::invalid_argument("connectivity must be 4 or 8");
  if (tiles.size() > std::numeric_limits<uint32_t>::max()) throw std::overflow_error("merge_tile_labels: tile count");
  std::vector<size_t> base(tiles.size() + 1, 0);
  for (size_t t = 0; t < tiles.size(); ++t) base[t + 1] = base[t] + static_cast<size_t>(tiles[t].nlabels);
  const size_t nodes = base.back();
  std::vector<size_t> group_of_node;
  {
    UnionFind sets(nodes);
    join_borders(tiles, base, columns, rows, connectivity == 8, sets);
    group_of_node = sets.take_roots();
  }
  // Groups (sources) are numbered by their root, i.e. in order of their first node; in place:
  // a node's root precedes it, so the root's entry already holds the group when it is read.
  size_t groups = 0;
  for (size_t node = 0; node < nodes; ++node) {
    const size_t root = group_of_node[node];
    group_of_node[node] = root == node ? groups++ : group_of_node[root];
  }
  if (groups > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw std::overflow_error("more than 2^31-1 sources in one image");
  }
  MergedSources merged;
  merged.count = static_cast<int32_t>(groups);
  const bool with_sums = std::any_of(tiles.begin(), tiles.end(), [](const TileLabels& t) { return !t.sums.empty(); });
  // The result's rows are allocated (and their pages first touched: 83 ms for a million rows on
  // the 2-core VM) by another thread while the sources are numbered.
  tbb::task_group allocation;
  if (with_sums) {
    allocation.run([&] {
      if (catalog_size != nullptr) merged.catalog.resize(groups);
      else merged.sums.resize(groups);
    });
  }
  try {
    number_and_fold(tiles, base, std::move(group_of_node), groups, catalog_size, with_sums, allocation, merged);
  } catch (...) {
    allocation.cancel();
    allocation.wait();
    throw;
  }
  return merged;
}

}  // namespace

MergedSources merge_tile_labels(std::vector<TileLabels>& tiles, int64_t columns, int64_t rows, int connectivity) {
  return merge(tiles, columns, rows, connectivity, nullptr);
}

MergedSources merge_tile_catalog(std::vector<TileLabels>& tiles, int64_t columns, int64_t rows, int connectivity,
                                 int64_t width, int64_t height) {
  const std::pair<int64_t, int64_t> size{width, height};
  return merge(tiles, columns, rows, connectivity, &size);
}

}  // namespace imflow::kernels
