// The SEP mesh background on the device: the per-mesh statistics (cuda/mesh_stats.hpp), then
// small kernels fill, filter and spline the grid; one thread per pixel evaluates the maps.
// Compiled with --fmad=false (cuda/CMakeLists.txt) so float expressions round as on the CPU.
#include <cub/device/device_radix_sort.cuh>

#include <cmath>
#include <memory>

#include "cuda/background_mesh.hpp"
#include "cuda/mesh_stats.hpp"
#include "imflow/kernels/mesh_fill.hpp"
#include "imflow/kernels/mesh_spline.hpp"
#include "cuda/device_common.cuh"

namespace imflow::cuda {
namespace {

constexpr double kBig = 1e30;
constexpr int kMaxWindow = static_cast<int>(kernels::kMaxMeshFilterSize * kernels::kMaxMeshFilterSize);

// SEP's fill of dropped meshes: the mean of the nearest valid ones.
__global__ void fill_kernel(const float* back, const float* sigma, int64_t nx, int64_t ny, float* out_back,
                            float* out_sigma) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= nx * ny) return;
  if (back[i] > -kBig) {
    out_back[i] = back[i];
    out_sigma[i] = sigma[i];
    return;
  }
  const int64_t py = i / nx, px = i - py * nx;
  const kernels::MeshValue filled = kernels::fill_dropped_mesh(back, sigma, nx, ny, px, py);
  out_back[i] = filled.back;
  out_sigma[i] = filled.sigma;
}

__device__ __forceinline__ bool before_in_order(float a, float b) { return a < b || (!isnan(a) && isnan(b)); }

// SEP's fqmedian of n <= kMaxWindow values (sorted in place).
__device__ float window_median(float* v, int n) {
  for (int i = 1; i < n; ++i) {
    const float key = v[i];
    int j = i - 1;
    while (j >= 0 && before_in_order(key, v[j])) {
      v[j + 1] = v[j];
      --j;
    }
    v[j + 1] = key;
  }
  if (n < 2) return v[0];
  return (n & 1) ? v[n / 2] : static_cast<float>((v[n / 2 - 1] + v[n / 2]) / 2.0);
}

__global__ void filter_kernel(const float* back, const float* sigma, int64_t nx, int64_t ny, int64_t reach_x,
                              int64_t reach_y, double threshold, float* out_back, float* out_sigma) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= nx * ny) return;
  const int64_t py = i / nx, px = i - py * nx;
  const int64_t ry = min(min(reach_y, ny - 1 - py), py), rx = min(min(reach_x, nx - 1 - px), px);
  float bwin[kMaxWindow], swin[kMaxWindow];
  int n = 0;
  for (int64_t y = py - ry; y <= py + ry; ++y) {
    for (int64_t x = px - rx; x <= px + rx; ++x, ++n) {
      bwin[n] = back[y * nx + x];
      swin[n] = sigma[y * nx + x];
    }
  }
  const float med = window_median(bwin, n);
  if (fabs(med - back[i]) >= threshold) {
    out_back[i] = med;
    out_sigma[i] = window_median(swin, n);
  } else {
    out_back[i] = back[i];
    out_sigma[i] = sigma[i];
  }
}

__device__ float sorted_median(const float* v, int64_t n) {
  if (n < 2) return v[0];
  return (n & 1) ? v[n / 2] : static_cast<float>((v[n / 2 - 1] + v[n / 2]) / 2.0);
}

// SEP's globalback and globalrms (the median of the positive sigmas when the median is <= 0).
__global__ void global_kernel(const float* sorted_back, const float* sorted_sigma, int64_t np, DeviceResults* results) {
  const float global_back = sorted_median(sorted_back, np);
  float global_rms = sorted_median(sorted_sigma, np);
  if (global_rms <= 0.0f) {
    int64_t i = np;
    while (i-- && sorted_sigma[i] > 0.0f) {
    }
    global_rms = (i >= 0 && i < np - 1) ? sorted_median(sorted_sigma + i + 1, np - 1 - i) : 1.0f;
  }
  results->median = global_back;
  results->std = global_rms;
  results->kept = results->valid;
  results->iterations = 0;
}

// y second derivatives of both maps: one thread per (map, mesh column).
__global__ void spline_y_kernel(const float* back, const float* sigma, int64_t nx, int64_t ny, float* second,
                                float* work) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= 2 * nx) return;
  const int64_t map = t / nx, x = t - map * nx;
  const float* values = map == 0 ? back : sigma;
  kernels::spline_second_derivatives(values + x, ny, nx, second + map * nx * ny + x, work + t * ny);
}

// Per map and image row: the nodes interpolated along y and their x second derivatives.
__global__ void row_nodes_kernel(const float* back, const float* sigma, const float* second, int64_t nx, int64_t ny,
                                 int64_t height, int64_t mesh_height, float* nodes, float* work) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= 2 * height) return;
  const int64_t map = t / height, y = t - map * height;
  const float* values = map == 0 ? back : sigma;
  const float* dvalues = second + map * nx * ny;
  float* node = nodes + t * 2 * nx;
  float* dnode = node + nx;
  if (ny < 2) {  // SEP uses the nodes and their (zero) y derivatives as they are
    for (int64_t x = 0; x < nx; ++x) {
      node[x] = values[x];
      dnode[x] = dvalues[x];
    }
    return;
  }
  float dy = static_cast<float>(static_cast<double>(static_cast<float>(y) / static_cast<float>(mesh_height)) - 0.5);
  int yl = static_cast<int>(dy);
  dy -= static_cast<float>(yl);
  if (yl < 0) {
    yl = 0;
    dy = static_cast<float>(dy - 1.0);
  } else if (yl >= ny - 1) {
    yl = static_cast<int>(ny - 2);
    dy = static_cast<float>(dy + 1.0);
  }
  const float cdy = 1 - dy, dy3 = dy * dy * dy - dy, cdy3 = cdy * cdy * cdy - cdy;
  const float* blo = values + yl * nx;
  const float* bhi = blo + nx;
  const float* dblo = dvalues + yl * nx;
  const float* dbhi = dblo + nx;
  for (int64_t x = 0; x < nx; ++x) node[x] = cdy * blo[x] + dy * bhi[x] + cdy3 * dblo[x] + dy3 * dbhi[x];
  kernels::spline_second_derivatives(node, nx, 1, dnode, work + t * nx);
}

// SEP's x walk, one thread per segment between node changes (kernels::spline_columns).
__global__ void columns_kernel(int64_t width, int64_t mesh_width, int64_t nx, int32_t* column_node, float* column_d) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t segments = nx - 1;  // nx >= 2
  if (k >= segments) return;
  const float xstep = static_cast<float>(1.0 / static_cast<double>(mesh_width));
  const int64_t begin = k == 0 ? 0 : k * mesh_width + mesh_width / 2;
  const int64_t end = k + 1 < segments ? (k + 1) * mesh_width + mesh_width / 2 : width;
  float dx = k == 0 ? (xstep - 1) / 2 : static_cast<float>((mesh_width + 1) % 2) * xstep / 2;
  for (int64_t p = begin; p < end && p < width; ++p, dx += xstep) {
    column_node[p] = static_cast<int32_t>(k);
    column_d[p] = dx;
  }
}

__global__ void maps_kernel(const float* nodes, const int32_t* column_node, const float* column_d, int64_t width,
                            int64_t height, int64_t nx, float* back_map, float* rms_map) {
  const int64_t x = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= width) return;
  const int32_t c = nx > 1 ? column_node[x] : 0;
  const float dx = nx > 1 ? column_d[x] : 0.0f, cdx = 1 - dx;
  for (int64_t y = blockIdx.y; y < height; y += gridDim.y) {
    for (int map = 0; map < 2; ++map) {
      const float* node = nodes + (map * height + y) * 2 * nx;
      const float* dnode = node + nx;
      const float value =
          nx > 1 ? cdx * (node[c] + (cdx * cdx - 1) * dnode[c]) + dx * (node[c + 1] + (dx * dx - 1) * dnode[c + 1])
                 : node[0];
      (map == 0 ? back_map : rms_map)[y * width + x] = value;
    }
  }
}

}  // namespace

void enqueue_fill_and_filter(const MeshGridBuffers& grid, int64_t nx, int64_t ny, const kernels::MeshParams& params,
                             cudaStream_t stream) {
  const int blocks = detail::blocks_for(nx * ny, 128);
  fill_kernel<<<blocks, 128, 0, stream>>>(grid.raw_back, grid.raw_sigma, nx, ny, grid.filled_back, grid.filled_sigma);
  IMFLOW_CUDA_CHECK_LAUNCH();
  filter_kernel<<<blocks, 128, 0, stream>>>(grid.filled_back, grid.filled_sigma, nx, ny, params.filter_width / 2,
                                            params.filter_height / 2, params.filter_threshold, grid.back, grid.sigma);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

void background_mesh(GpuContext& gpu, const kernels::MeshParams& params) {
  if (!gpu.mesh_background) gpu.mesh_background = std::make_shared<MeshBackgroundState>();
  background_mesh_of(gpu, params, gpu.has_detection ? gpu.detection.data() : gpu.image.data(), *gpu.mesh_background,
                     gpu.results.data());
  gpu.has_background = true;
  gpu.has_background_maps = true;
}

void background_mesh_of(GpuContext& gpu, const kernels::MeshParams& params, const float* source,
                        MeshBackgroundState& st, DeviceResults* results) {
  DeviceGuard guard(gpu.device);
  const int64_t width = gpu.width, height = gpu.height, n = gpu.size();
  const int64_t nx = width > 0 ? (width - 1) / params.mesh_width + 1 : 1;
  const int64_t ny = height > 0 ? (height - 1) / params.mesh_height + 1 : 1;
  const int64_t np = nx * ny;
  st.nx = nx;
  st.ny = ny;
  const size_t nps = static_cast<size_t>(np);
  st.raw_back.reserve(nps);
  st.raw_sigma.reserve(nps);
  st.filled_back.reserve(nps);
  st.filled_sigma.reserve(nps);
  st.back.reserve(nps);
  st.sigma.reserve(nps);
  st.second.reserve(2 * nps);
  st.sorted.reserve(2 * nps);
  st.spline_work.reserve(static_cast<size_t>(std::max<int64_t>(2 * np, 2 * height * nx)));
  st.row_nodes.reserve(static_cast<size_t>(4 * height * nx));
  st.column_node.reserve(static_cast<size_t>(width) + 1);
  st.column_d.reserve(static_cast<size_t>(width) + 1);
  st.back_map.reserve(static_cast<size_t>(n) + 4);
  st.rms_map.reserve(static_cast<size_t>(n) + 4);
  size_t sort_bytes = 0;
  IMFLOW_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, sort_bytes, st.back.data(), st.sorted.data(),
                                                   static_cast<int>(np), 0, 32, gpu.stream));
  st.sort_temp.reserve(sort_bytes + 16);

  if (n == 0) {  // as the CPU: NaN statistics, empty maps
    const double nan = std::nan("");
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(&results->median, &nan, sizeof(double), cudaMemcpyHostToDevice, gpu.stream));
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(&results->std, &nan, sizeof(double), cudaMemcpyHostToDevice, gpu.stream));
    return;
  }
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(&results->valid, 0, sizeof(long long), gpu.stream));
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(&results->meshes_dropped, 0, sizeof(long long), gpu.stream));

  enqueue_mesh_stats(source, width, height, params, nx, ny, st.raw_back.data(), st.raw_sigma.data(), results,
                     gpu.stream);
  enqueue_fill_and_filter(MeshGridBuffers{st.raw_back.data(), st.raw_sigma.data(), st.filled_back.data(),
                                          st.filled_sigma.data(), st.back.data(), st.sigma.data()},
                          nx, ny, params, gpu.stream);
  for (int map = 0; map < 2; ++map) {
    size_t bytes = sort_bytes;
    IMFLOW_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(st.sort_temp.data(), bytes, map == 0 ? st.back.data() : st.sigma.data(),
                                                     st.sorted.data() + map * np, static_cast<int>(np), 0, 32,
                                                     gpu.stream));
  }
  global_kernel<<<1, 1, 0, gpu.stream>>>(st.sorted.data(), st.sorted.data() + np, np, results);
  IMFLOW_CUDA_CHECK_LAUNCH();
  spline_y_kernel<<<detail::blocks_for(2 * nx, 128), 128, 0, gpu.stream>>>(st.back.data(), st.sigma.data(), nx, ny,
                                                                          st.second.data(), st.spline_work.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  row_nodes_kernel<<<detail::blocks_for(2 * height, 128), 128, 0, gpu.stream>>>(
      st.back.data(), st.sigma.data(), st.second.data(), nx, ny, height, params.mesh_height, st.row_nodes.data(),
      st.spline_work.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  if (nx > 1) {
    columns_kernel<<<detail::blocks_for(nx, 128), 128, 0, gpu.stream>>>(width, params.mesh_width, nx,
                                                                       st.column_node.data(), st.column_d.data());
    IMFLOW_CUDA_CHECK_LAUNCH();
  }
  const dim3 map_grid(static_cast<unsigned>((width + 255) / 256), static_cast<unsigned>(std::min<int64_t>(height, 65535)));
  maps_kernel<<<map_grid, 256, 0, gpu.stream>>>(st.row_nodes.data(), st.column_node.data(), st.column_d.data(), width,
                                                height, nx, st.back_map.data(), st.rms_map.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
