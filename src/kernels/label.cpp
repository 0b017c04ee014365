// Connected-component labelling on the CPU: the runs of each mask row, union-find over runs that
// touch a run of the row above (roots kept at the smallest run index), then one write of the
// label map. Runs are numbered in raster order and a component's first run holds its first
// pixel, so numbering roots in run order gives scipy.ndimage.label's order. A minarea is applied
// to the components' sizes summed over their runs, before the map is written.
#include "imflow/kernels/label.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace imflow::kernels {

namespace {
struct Run {
  int64_t begin, end;  // [begin, end) columns of one row
};

int64_t find_root(std::vector<int64_t>& parent, int64_t i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

void unite(std::vector<int64_t>& parent, int64_t a, int64_t b) {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a < b) {
    parent[b] = a;
  } else if (b < a) {
    parent[a] = b;
  }
}

// The first x >= from with row[x] != 0 (or width): zero bytes skipped eight at a time.
int64_t next_set(const uint8_t* row, int64_t from, int64_t width) {
  int64_t x = from;
  for (; x + 8 <= width; x += 8) {
    uint64_t word;
    std::memcpy(&word, row + x, sizeof word);
    if (word != 0) break;
  }
  while (x < width && row[x] == 0) ++x;
  return x;
}

// Appends the runs of non-zero bytes of one row.
void find_runs(const uint8_t* row, int64_t width, std::vector<Run>& runs) {
  int64_t x = next_set(row, 0, width);
  while (x < width) {
    const int64_t begin = x;
    while (x < width && row[x] != 0) ++x;
    runs.push_back({begin, x});
    x = next_set(row, x, width);
  }
}
}  // namespace

int32_t label_components(View2D<const uint8_t> mask, int connectivity, int32_t* labels, bool labels_zeroed,
                         int64_t minarea) {
  if (connectivity != 4 && connectivity != 8) throw std::invalid_argument("connectivity must be 4 or 8");
  const int64_t width = mask.width;
  const int64_t height = mask.height;
  // Runs touch across rows when their columns overlap (4), or overlap after widening by one (8).
  const int64_t reach = connectivity == 8 ? 1 : 0;
  std::vector<Run> runs;
  std::vector<int64_t> row_start(static_cast<size_t>(height) + 1, 0);
  std::vector<int64_t> parent;
  for (int64_t y = 0; y < height; ++y) {
    const int64_t first = static_cast<int64_t>(runs.size());
    row_start[y] = first;
    find_runs(mask.data + y * width, width, runs);
    const int64_t last = static_cast<int64_t>(runs.size());
    for (int64_t r = first; r < last; ++r) parent.push_back(r);
    if (y == 0) continue;
    // Merge-walk this row's runs against the row above's.
    int64_t above = row_start[y - 1];
    const int64_t above_end = first;
    for (int64_t r = first; r < last && above < above_end; ++r) {
      const Run run = runs[r];
      while (above < above_end && runs[above].end + reach <= run.begin) ++above;
      for (int64_t a = above; a < above_end && runs[a].begin < run.end + reach; ++a) unite(parent, r, a);
    }
  }
  row_start[height] = static_cast<int64_t>(runs.size());

  // Each run's root, and (with a minarea) each component's pixels summed over its runs at its root.
  std::vector<int64_t> pixels(minarea > 1 ? runs.size() : 0, 0);
  for (size_t r = 0; r < runs.size(); ++r) {
    parent[r] = find_root(parent, static_cast<int64_t>(r));
    if (minarea > 1) pixels[static_cast<size_t>(parent[r])] += runs[r].end - runs[r].begin;
  }
  // A root is the first run of its component: number the roots of components kept as they come.
  std::vector<int32_t> run_label(runs.size());
  int64_t count = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    const auto root = static_cast<size_t>(parent[r]);
    if (root != r) {
      run_label[r] = run_label[root];
    } else if (minarea > 1 && pixels[r] < minarea) {
      run_label[r] = 0;
    } else {
      if (count == std::numeric_limits<int32_t>::max()) throw std::overflow_error("more than 2^31-1 components");
      run_label[r] = static_cast<int32_t>(++count);
    }
  }
  for (int64_t y = 0; y < height; ++y) {
    int32_t* row = labels + y * width;
    int64_t x = 0;
    for (int64_t r = row_start[y]; r < row_start[y + 1]; ++r) {
      if (!labels_zeroed) std::fill(row + x, row + runs[r].begin, 0);
      std::fill(row + runs[r].begin, row + runs[r].end, run_label[r]);
      x = runs[r].end;
    }
    if (!labels_zeroed) std::fill(row + x, row + width, 0);
  }
  return static_cast<int32_t>(count);
}

int32_t drop_small_components(int32_t* labels, int64_t n, int32_t nlabels, int64_t minarea) {
  if (minarea <= 1 || nlabels == 0) return nlabels;
  std::vector<int64_t> npix(static_cast<size_t>(nlabels) + 1, 0);
  for (int64_t i = 0; i < n; ++i) ++npix[static_cast<size_t>(labels[i])];
  std::vector<int32_t> renumbered(static_cast<size_t>(nlabels) + 1, 0);
  int32_t kept = 0;
  for (int32_t l = 1; l <= nlabels; ++l)
    if (npix[static_cast<size_t>(l)] >= minarea) renumbered[static_cast<size_t>(l)] = ++kept;
  for (int64_t i = 0; i < n; ++i) labels[i] = renumbered[static_cast<size_t>(labels[i])];
  return kept;
}

}  // namespace imflow::kernels
