// Who walks an aperture's pixels: one thread (SerialTeam: the host, in row-major order) or the
// lanes of a GPU warp (cuda/warp_team.cuh). Host and device; the aperture definitions
// (aperture_*.hpp) are templates over the team, so both share one definition.
#pragma once
#include <cstdint>

#include "imflow/kernels/aperture_geometry.hpp"
#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

// A team has `size` members; member `rank()` visits pixels rank, rank + size, ... of a box in
// row-major order; sum() and bit_or() combine every member's partial value and give each member
// the same result (bit for bit), so the code after a loop runs identically on all of them.
struct SerialTeam {
  static constexpr int size = 1;
  IMFLOW_HOST_DEVICE static int rank() { return 0; }
  IMFLOW_HOST_DEVICE static double sum(double v) { return v; }
  IMFLOW_HOST_DEVICE static int64_t sum(int64_t v) { return v; }
  IMFLOW_HOST_DEVICE static int32_t bit_or(int32_t v) { return v; }
};

// visit(ix, iy) for this member's pixels of `box`: all of them, row by row, for a team of one.
template <typename Team, typename Visit>
IMFLOW_HOST_DEVICE inline void for_box_pixels(const PixelBox& box, Visit&& visit) {
  if constexpr (Team::size == 1) {
    for (int64_t iy = box.ymin; iy < box.ymax; ++iy) {
      for (int64_t ix = box.xmin; ix < box.xmax; ++ix) visit(ix, iy);
    }
  } else {
    const int64_t width = box.xmax - box.xmin;
    if (width <= 0 || box.ymax <= box.ymin) return;
    // Pixel k = rank + j x size sits at (xmin + k % width, ymin + k / width): stepped, not divided.
    int64_t ix = box.xmin + Team::rank() % width, iy = box.ymin + Team::rank() / width;
    const int64_t step_x = Team::size % width, step_y = Team::size / width;
    while (iy < box.ymax) {
      visit(ix, iy);
      ix += step_x;
      iy += step_y;
      if (ix >= box.xmax) {
        ix -= width;
        ++iy;
      }
    }
  }
}

// Every member's partial sums of `values` combined in place.
template <typename Team, typename T>
IMFLOW_HOST_DEVICE inline void team_sum(T* values, int64_t count) {
  if constexpr (Team::size > 1) {
    for (int64_t i = 0; i < count; ++i) values[i] = Team::sum(values[i]);
  }
}

}  // namespace imflow::kernels
