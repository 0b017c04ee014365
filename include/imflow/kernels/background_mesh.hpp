// The SExtractor/SEP mesh background, CPU kernel: per-mesh clipped histogram mode and sigma, a
// median-filtered mesh grid, bicubic-spline maps of the background and its RMS (SEP's background.c).
#pragma once
#include <cstdint>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

// SEP's sep_background(image, bw, bh, fw, fh, fthresh) settings.
struct MeshParams {
  int64_t mesh_width = 64;   // bw
  int64_t mesh_height = 64;  // bh
  int64_t filter_width = 3;  // fw: the median filter reaches fw/2 meshes each side, as SEP
  int64_t filter_height = 3; // fh
  double filter_threshold = 0.0;  // fthresh: filter a mesh only where |median - value| >= this
};

// The largest filter_size (the GPU median filter keeps its window in registers).
inline constexpr int64_t kMaxMeshFilterSize = 11;

// SEP's -BIG: the marker of a mesh with fewer than half of its pixels valid.
inline constexpr float kDroppedMesh = -1e30f;

// One mesh's background (SEP's mode estimate) and sigma, or kDroppedMesh for both.
struct MeshEstimate {
  float back = kDroppedMesh;
  float sigma = kDroppedMesh;
  int64_t valid = 0;  // finite pixels of the mesh
};

// Working memory of estimate_mesh, reused from mesh to mesh.
struct MeshScratch {
  std::vector<int32_t> histogram;  // nlevels bins and a spare one for the pixels outside
  std::vector<int32_t> bins;       // the bin of each pixel of a row
  std::vector<int32_t> prefix;     // histogram_mode's prefix counts
};

// The statistics of the w x h pixels at `origin` (rows `stride` apart): SEP's backstat (mean +-
// 2 sigma cut), backhisto (histogram over +-5 sigma, at most 4096 bins) and backguess (clip at
// median +- 3 sigma until sigma converges; mode 2.5 median - 1.5 mean where |mean - median| /
// sigma < 0.3, else the median). Non-finite pixels (and those <= -1e30) are masked.
MeshEstimate estimate_mesh(const float* origin, int64_t stride, int64_t w, int64_t h, MeshScratch& scratch);

// estimate_mesh of `count` meshes of w x h pixels side by side (mesh k at origin + k w), into
// out[0, count): the same values, the band read row by row, two meshes to an SSE2 vector
// (src/kernels/mesh_estimate.cpp).
void estimate_meshes(const float* origin, int64_t stride, int64_t w, int64_t h, int64_t count, MeshEstimate* out,
                     MeshScratch& scratch);

// The mesh grid and what the maps are interpolated from.
struct MeshGrid {
  int64_t nx = 0, ny = 0;        // meshes across and down ((size - 1) / mesh + 1, SEP's rule)
  int64_t width = 0, height = 0; // the image
  int64_t mesh_width = 0, mesh_height = 0;
  std::vector<float> back, sigma;    // nx * ny, row-major: filled and median-filtered
  std::vector<float> dback, dsigma;  // second derivatives along y (SEP's makebackspline)
  float global_back = 0.0f;          // median of the filtered meshes (SEP's globalback)
  float global_rms = 0.0f;           // median of the filtered sigmas (SEP's globalrms)
  int64_t dropped = 0;               // meshes with fewer than half of their pixels valid
  int64_t valid = 0;                 // finite pixels in the image
};

// Per-mesh estimates of the image (the last column/row of meshes is narrower when the size is
// not a multiple of the mesh), then fill_and_filter and the y splines.
MeshGrid mesh_grid(ConstImageView image, const MeshParams& params);

// SEP's filterback: dropped meshes take the mean of the nearest valid ones (0 and sigma 1 when
// there is none); then a median filter over a window clipped symmetrically at the grid's edges;
// then the global back and rms. Works on grid.back/sigma in place.
void fill_and_filter(MeshGrid& grid, int64_t filter_width, int64_t filter_height, double filter_threshold);

// Natural cubic-spline second derivatives along one axis of `values` (count nodes, `stride`
// apart), in float as SEP; all zero for fewer than 3 nodes (imflow/kernels/mesh_spline.hpp, `work`
// as its scratch).
void spline_second_derivatives(const float* values, int64_t count, int64_t stride, float* second, std::vector<float>& work);

// Where a pixel column (or row) falls between mesh nodes: interpolate between nodes `node` and
// node + 1 at fraction `d` (outside [0, 1] at the edges: SEP extrapolates the end segments).
struct SplineStep {
  int32_t node = 0;
  float d = 0.0f;
};
// Columns replay SEP's per-row walk (node changes half a mesh past each node, d accumulates in
// float); rows use SEP's y formula.
std::vector<SplineStep> spline_columns(int64_t width, int64_t mesh_width, int64_t nx);
SplineStep spline_row(int64_t y, int64_t mesh_height, int64_t ny);

// The whole method: back_map and rms_map (width x height) as sep.Background(...).back() and
// .rms(); the returned stats carry the global back (median) and rms (std), as SEP's globalback
// and globalrms, and the number of valid pixels. The rows come from MeshRows (mesh_rows.hpp).
BackgroundStats mesh_background(ConstImageView image, const MeshParams& params, std::vector<float>& back_map,
                                std::vector<float>& rms_map);

// The same without the RMS map: back_map, and in `grid` what MeshRows evaluates the RMS rows
// from (the values rms_map would hold), for a caller that needs one row at a time.
BackgroundStats mesh_background(ConstImageView image, const MeshParams& params, std::vector<float>& back_map,
                                MeshGrid& grid);

// The stats mesh_background returns, from the grid.
BackgroundStats mesh_stats(const MeshGrid& grid);

}  // namespace imflow::kernels
