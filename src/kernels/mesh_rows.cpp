// Rows of the mesh background's maps on the CPU (see include/imflow/kernels/mesh_rows.hpp). The
// arithmetic is SEP's per-pixel bkg_line_flt_internal, float for float; only the column factors
// are computed once per image instead of once per pixel, and each run of columns between the
// same two nodes is one loop that the compiler vectorises (both maps of a 4096^2 field: 41 ->
// 20 ms).
#include "imflow/kernels/mesh_rows.hpp"

#include <algorithm>

namespace imflow::kernels {

MeshRows::MeshRows(const MeshGrid& grid) : grid_(grid) {
  const std::vector<SplineStep> columns = spline_columns(grid.width, grid.mesh_width, grid.nx);
  const size_t width = columns.size();
  d_.resize(width);
  cd_.resize(width);
  d_squared_less_1_.resize(width);
  cd_squared_less_1_.resize(width);
  for (size_t x = 0; x < width; ++x) {
    const float dx = columns[x].d, cdx = 1 - dx;
    d_[x] = dx;
    cd_[x] = cdx;
    d_squared_less_1_[x] = dx * dx - 1;
    cd_squared_less_1_[x] = cdx * cdx - 1;
    if (x == 0 || columns[x].node != columns[x - 1].node) {
      run_start_.push_back(static_cast<int64_t>(x));
      run_node_.push_back(columns[x].node);
    }
  }
  run_start_.push_back(static_cast<int64_t>(width));
}

void MeshRows::row(const std::vector<float>& values, const std::vector<float>& second, int64_t y, float* out) {
  const int64_t nbx = grid_.nx, nby = grid_.ny;
  const float* node;
  const float* dnode;
  if (nby > 1) {
    const SplineStep row = spline_row(y, grid_.mesh_height, nby);
    const float dy = row.d, cdy = 1 - dy;
    const float dy3 = dy * dy * dy - dy, cdy3 = cdy * cdy * cdy - cdy;
    const float* blo = values.data() + row.node * nbx;
    const float* bhi = blo + nbx;
    const float* dblo = second.data() + row.node * nbx;
    const float* dbhi = dblo + nbx;
    nodes_.resize(static_cast<size_t>(2 * nbx));
    for (int64_t x = 0; x < nbx; ++x) nodes_[x] = cdy * blo[x] + dy * bhi[x] + cdy3 * dblo[x] + dy3 * dbhi[x];
    spline_second_derivatives(nodes_.data(), nbx, 1, nodes_.data() + nbx, work_);
    node = nodes_.data();
    dnode = nodes_.data() + nbx;
  } else {  // one row of meshes: SEP uses the nodes as they are and their (zero) y derivatives
    node = values.data();
    dnode = second.data();
  }
  if (nbx < 2) {
    std::fill(out, out + grid_.width, node[0]);
    return;
  }
  const float* d = d_.data();
  const float* cd = cd_.data();
  const float* d_sq = d_squared_less_1_.data();
  const float* cd_sq = cd_squared_less_1_.data();
  for (size_t r = 0; r + 1 < run_start_.size(); ++r) {
    const int32_t k = run_node_[r];
    const float blo = node[k], bhi = node[k + 1], dblo = dnode[k], dbhi = dnode[k + 1];
    for (int64_t x = run_start_[r]; x < run_start_[r + 1]; ++x) {
      out[x] = cd[x] * (blo + cd_sq[x] * dblo) + d[x] * (bhi + d_sq[x] * dbhi);
    }
  }
}

}  // namespace imflow::kernels
