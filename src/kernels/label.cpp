// Connected-component labelling on the CPU: union-find over the raster scan, roots kept at the
// smallest linear index, so numbering roots in raster order gives scipy.ndimage.label's order.
#include "imflow/kernels/label.hpp"

#include <limits>
#include <stdexcept>
#include <vector>

namespace imflow::kernels {

namespace {
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
}  // namespace

int32_t label_components(View2D<const uint8_t> mask, int connectivity, int32_t* labels) {
  if (connectivity != 4 && connectivity != 8) throw std::invalid_argument("connectivity must be 4 or 8");
  const int64_t width = mask.width;
  const int64_t height = mask.height;
  std::vector<int64_t> parent(static_cast<size_t>(mask.size()));
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      const int64_t i = y * width + x;
      parent[i] = i;
      if (!mask.data[i]) continue;
      if (x > 0 && mask.data[i - 1]) unite(parent, i, i - 1);
      if (y > 0) {
        const int64_t up = i - width;
        if (mask.data[up]) unite(parent, i, up);
        if (connectivity == 8) {
          if (x > 0 && mask.data[up - 1]) unite(parent, i, up - 1);
          if (x + 1 < width && mask.data[up + 1]) unite(parent, i, up + 1);
        }
      }
    }
  }
  // A root is the first pixel of its component in raster order: number roots as they come.
  int64_t count = 0;
  for (int64_t i = 0; i < mask.size(); ++i) {
    if (!mask.data[i]) {
      labels[i] = 0;
    } else if (parent[i] == i) {
      if (count == std::numeric_limits<int32_t>::max()) throw std::overflow_error("more than 2^31-1 components");
      labels[i] = static_cast<int32_t>(++count);
    } else {
      labels[i] = labels[find_root(parent, i)];
    }
  }
  return static_cast<int32_t>(count);
}

}  // namespace imflow::kernels
