// SExtractor/SEP mesh background on the device (twin of kernels::mesh_background): per-mesh
// statistics one block per mesh, the mesh-grid fill/filter/splines, full-resolution maps.
#pragma once
#include "cuda/gpu_context.hpp"
#include "imflow/kernels/background_mesh.hpp"

namespace imflow::cuda {

// A slot's mesh-background buffers (grow-only), kept in GpuContext::mesh_background.
struct MeshBackgroundState {
  int64_t nx = 0, ny = 0;                  // the grid of the current item
  DeviceBuffer<float> raw_back, raw_sigma; // per-mesh estimates (kernels::kDroppedMesh when dropped)
  DeviceBuffer<float> filled_back, filled_sigma;
  DeviceBuffer<float> back, sigma;         // filled and median-filtered (kernels::MeshGrid::back/sigma)
  DeviceBuffer<float> second;              // [dback | dsigma], the y second derivatives
  DeviceBuffer<float> spline_work;         // tridiagonal sweeps of the y splines and the row nodes
  DeviceBuffer<float> sorted;              // [back | sigma] sorted, for the global medians
  DeviceBuffer<unsigned char> sort_temp;   // CUB radix-sort storage
  DeviceBuffer<float> row_nodes;           // per map and row: nx interpolated nodes, nx x-derivatives
  DeviceBuffer<int32_t> column_node;       // per column: the left node (SEP's x walk)
  DeviceBuffer<float> column_d;            // per column: the fraction between the nodes
  DeviceBuffer<float> back_map, rms_map;   // width x height, valid when gpu.has_background_maps
};

// A mesh grid's estimates as they are filled and filtered (device arrays of nx x ny).
struct MeshGridBuffers {
  const float* raw_back;
  const float* raw_sigma;  // per-mesh estimates, kernels::kDroppedMesh where dropped
  float* filled_back;
  float* filled_sigma;  // scratch: dropped meshes filled with the mean of the nearest valid ones
  float* back;
  float* sigma;  // filled and median-filtered (kernels::fill_and_filter)
};

// SEP's fill of the dropped meshes and median filter of the grid (kernels::fill_and_filter's
// arithmetic), enqueued on `stream`.
void enqueue_fill_and_filter(const MeshGridBuffers& grid, int64_t nx, int64_t ny, const kernels::MeshParams& params,
                             cudaStream_t stream);

// Enqueue the mesh background of gpu.detection (when a GPU convolve made one) or gpu.image:
// maps in gpu.mesh_background->back_map/rms_map; results.median/std = SEP's globalback and
// globalrms, results.valid = kept = the finite pixels, results.meshes_dropped. Sets has_background and
// has_background_maps. The arithmetic is kernels::mesh_background's (this file is compiled
// without FMA contraction), so maps agree with the CPU's to float rounding.
void background_mesh(GpuContext& gpu, const kernels::MeshParams& params);

// The same of the gpu.size() pixels at `source` into `state`'s maps and `results` (median, std,
// valid, kept, meshes_dropped), leaving the context's flags alone: the measured image's own
// background in dual-image mode (cuda/measured_image.hpp).
void background_mesh_of(GpuContext& gpu, const kernels::MeshParams& params, const float* source,
                        MeshBackgroundState& state, DeviceResults* results);

}  // namespace imflow::cuda
