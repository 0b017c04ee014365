// Rows of the mesh background's maps (sep.Background's back() and rms()), CPU kernel: SEP's
// bkg_line_flt_internal, one image row at a time, so that a caller can use a row of a map
// without the whole map.
#pragma once
#include <cstdint>
#include <vector>

#include "imflow/kernels/background_mesh.hpp"

namespace imflow::kernels {

class MeshRows {
 public:
  // `grid` must outlive this object.
  explicit MeshRows(const MeshGrid& grid);

  // Row y (grid.width values) of the background map and of the RMS map.
  void back(int64_t y, float* out) { row(grid_.back, grid_.dback, y, out); }
  void rms(int64_t y, float* out) { row(grid_.sigma, grid_.dsigma, y, out); }

 private:
  // values/second: back/dback or sigma/dsigma. The y spline gives the row's nodes, a natural
  // spline along x their second derivatives, then every column between its two nodes.
  void row(const std::vector<float>& values, const std::vector<float>& second, int64_t y, float* out);

  const MeshGrid& grid_;
  // spline_columns as runs of columns between the same two nodes, and per column SEP's factors
  // d, 1 - d, d^2 - 1 and (1 - d)^2 - 1 (the same float values SEP computes per pixel).
  std::vector<int64_t> run_start_;  // runs + 1 entries
  std::vector<int32_t> run_node_;
  std::vector<float> d_, cd_, d_squared_less_1_, cd_squared_less_1_;
  std::vector<float> nodes_, work_;  // scratch
};

}  // namespace imflow::kernels
