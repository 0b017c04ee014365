// Tile label merging: border extraction, union-find over (tile, local label), raster numbering.
#include "imflow/kernels/tile_merge.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

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

 private:
  std::vector<size_t> parent_;
};
}  // namespace

MergedSources merge_tile_labels(std::vector<TileLabels>& tiles, int64_t columns, int64_t rows, int connectivity) {
  if (static_cast<int64_t>(tiles.size()) != columns * rows) throw std::invalid_argument("merge_tile_labels: grid size");
  if (connectivity != 4 && connectivity != 8) throw std::invalid_argument("connectivity must be 4 or 8");
  std::vector<size_t> base(tiles.size() + 1, 0);
  for (size_t t = 0; t < tiles.size(); ++t) base[t + 1] = base[t] + static_cast<size_t>(tiles[t].nlabels);
  UnionFind sets(base.back());
  auto join = [&](size_t ta, int32_t a, size_t tb, int32_t b) {
    if (a > 0 && b > 0) sets.unite(base[ta] + static_cast<size_t>(a - 1), base[tb] + static_cast<size_t>(b - 1));
  };
  const bool diagonal = connectivity == 8;
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
  // One group per root: first pixel (smallest raster index) and the merged sums, folded in tile
  // order then label order.
  const bool with_sums = std::any_of(tiles.begin(), tiles.end(), [](const TileLabels& t) { return !t.sums.empty(); });
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<size_t> group_of_root(base.back(), kNone);
  std::vector<int64_t> group_first;
  std::vector<SourceSums> group_sums;
  std::vector<size_t> group_of_node(base.back());
  for (size_t t = 0; t < tiles.size(); ++t) {
    for (int32_t l = 1; l <= tiles[t].nlabels; ++l) {
      const size_t node = base[t] + static_cast<size_t>(l - 1);
      const size_t root = sets.find(node);
      size_t& group = group_of_root[root];
      if (group == kNone) {
        group = group_first.size();
        group_first.push_back(std::numeric_limits<int64_t>::max());
        if (with_sums) group_sums.emplace_back();
      }
      group_of_node[node] = group;
      group_first[group] = std::min(group_first[group], tiles[t].first[static_cast<size_t>(l - 1)]);
      if (with_sums && !tiles[t].sums.empty()) group_sums[group].merge(tiles[t].sums[static_cast<size_t>(l - 1)]);
    }
    std::vector<SourceSums>().swap(tiles[t].sums);  // merged: free as we go (a mosaic has millions)
  }
  std::vector<size_t> order(group_first.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return group_first[a] < group_first[b]; });
  if (order.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw std::overflow_error("more than 2^31-1 sources in one image");
  }
  std::vector<int32_t> id_of_group(order.size());
  MergedSources merged;
  merged.count = static_cast<int32_t>(order.size());
  for (size_t rank = 0; rank < order.size(); ++rank) id_of_group[order[rank]] = static_cast<int32_t>(rank + 1);
  if (with_sums) {
    // Put the groups in id order in place (follow the cycles of the permutation): no second copy.
    std::vector<bool> placed(order.size(), false);
    for (size_t start = 0; start < order.size(); ++start) {
      if (placed[start]) continue;
      SourceSums carried = group_sums[start];
      size_t hole = start;
      for (;;) {
        placed[hole] = true;
        const size_t from = order[hole];  // the group that belongs at position `hole`
        if (from == start) break;
        group_sums[hole] = group_sums[from];
        hole = from;
      }
      group_sums[hole] = carried;
    }
    merged.sums = std::move(group_sums);
  }
  merged.final_id.resize(tiles.size());
  for (size_t t = 0; t < tiles.size(); ++t) {
    auto& ids = merged.final_id[t];
    ids.resize(static_cast<size_t>(tiles[t].nlabels));
    for (int32_t l = 1; l <= tiles[t].nlabels; ++l) ids[static_cast<size_t>(l - 1)] = id_of_group[group_of_node[base[t] + static_cast<size_t>(l - 1)]];
  }
  return merged;
}

}  // namespace imflow::kernels
