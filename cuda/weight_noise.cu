// A weight map's RMS map on the device (cuda/weight_noise.hpp): one block per mesh for the
// variance mode (cuda/mesh_mode.cuh), the grid filled and filtered as the image's, the ratios
// sorted for their median, one thread per pixel for the map. Compiled with --fmad=false
// (cuda/CMakeLists.txt) so float expressions round as on the CPU.
#include <cub/device/device_radix_sort.cuh>

#include <cstring>
#include <memory>

#include "cuda/background_mesh.hpp"
#include "cuda/device_common.cuh"
#include "cuda/measured_image.hpp"
#include "cuda/mesh_mode.cuh"
#include "cuda/weight_noise.hpp"

namespace imflow::cuda {
namespace {

using mesh::kBins;
using mesh::kThreads;
using mesh::Moments;

__device__ __forceinline__ bool usable(float pixel, float variance) {
  return isfinite(pixel) && pixel > -mesh::kBig && variance < mesh::kBig;
}

__device__ __forceinline__ double sigma_of(const Moments& m) {
  const double mean = m.a / static_cast<double>(m.n), var = m.b / static_cast<double>(m.n) - mean * mean;
  return var > 0.0 ? sqrt(var) : 0.0;
}

struct Geometry {
  const float* image;
  const float* variance;
  int64_t width, height, mesh_width, mesh_height, nx;
};

// One block per mesh: the variance mode and sigma of kernels::weight_scale's variance_mesh.
__global__ void __launch_bounds__(kThreads) variance_mesh_kernel(Geometry g, float* back, float* sigma) {
  __shared__ int histo[kBins];
  __shared__ mesh::BlockStorage storage;
  const int64_t mesh = blockIdx.x;
  const mesh::MeshRect rect(mesh, g.nx, g.width, g.height, g.mesh_width, g.mesh_height);
  const int64_t count = rect.count();
  auto offset = [&](int64_t k) { return rect.index(k); };
  auto dropped = [&] {
    if (threadIdx.x == 0) back[mesh] = sigma[mesh] = kernels::kDroppedMesh;
  };

  Moments image{0.0, 0.0, 0}, weights{0.0, 0.0, 0};
  for (int64_t k = threadIdx.x; k < count; k += kThreads) {
    const float p = g.image[offset(k)], v = g.variance[offset(k)];
    if (!usable(p, v)) continue;
    image.a += p;
    image.b += static_cast<double>(p) * p;
    ++image.n;
    weights.a += v;
    weights.b += static_cast<double>(v) * v;
  }
  image = mesh::block_sum(image, storage);
  weights = mesh::block_sum(weights, storage);
  weights.n = image.n;
  if (static_cast<float>(image.n) < static_cast<float>(static_cast<double>(count) * 0.5)) return dropped();
  const double mean = image.a / static_cast<double>(image.n), sd = sigma_of(image);
  const double wmean = weights.a / static_cast<double>(weights.n), wsd = sigma_of(weights);
  const auto lcut = static_cast<float>(mean - 2.0 * sd), hcut = static_cast<float>(mean + 2.0 * sd);
  const auto wlcut = static_cast<float>(wmean - 2.0 * wsd), whcut = static_cast<float>(wmean + 2.0 * wsd);

  Moments clipped{0.0, 0.0, 0}, wclipped{0.0, 0.0, 0};
  for (int64_t k = threadIdx.x; k < count; k += kThreads) {
    const float p = g.image[offset(k)], v = g.variance[offset(k)];
    if (!usable(p, v) || !(p <= hcut && p >= lcut)) continue;
    clipped.a += p;
    clipped.b += static_cast<double>(p) * p;
    ++clipped.n;
    if (!(v <= whcut && v >= wlcut)) continue;
    wclipped.a += v;
    wclipped.b += static_cast<double>(v) * v;
    ++wclipped.n;
  }
  clipped = mesh::block_sum(clipped, storage);
  wclipped = mesh::block_sum(wclipped, storage);
  if (clipped.n == 0 || wclipped.n == 0) return dropped();
  const mesh::Quantisation q(clipped.a / static_cast<double>(clipped.n), sigma_of(clipped), clipped.n);
  const double wclipped_mean = wclipped.a / static_cast<double>(wclipped.n);
  const mesh::Quantisation wq(wclipped_mean, sigma_of(wclipped), wclipped.n);

  for (int b = threadIdx.x; b < kBins; b += kThreads) histo[b] = 0;
  __syncthreads();
  for (int64_t k = threadIdx.x; k < count; k += kThreads) {
    const float p = g.image[offset(k)], v = g.variance[offset(k)];
    if (!(v < mesh::kBig) || q.bin(p) < 0) continue;
    const int b = wq.bin(v);
    if (b >= 0) atomicAdd(&histo[b], 1);
  }
  __syncthreads();
  const mesh::MeshMode mode =
      mesh::histogram_mode(histo, wq.nlevels, static_cast<float>(wclipped_mean), wq.qzero, wq.qscale, storage);
  if (threadIdx.x == 0) {
    back[mesh] = mode.back;
    sigma[mesh] = mode.sigma;
  }
}

// Per mesh the ratio the median is taken over, NaN (sorted last) where the CPU drops it.
__global__ void ratio_kernel(const float* image_sigma, const float* variance_mode, int64_t meshes, float* ratios) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= meshes) return;
  float ratio = __int_as_float(0x7fc00000);
  if (variance_mode[i] > 0.0f) {
    const auto r = static_cast<float>(image_sigma[i] / sqrt(static_cast<double>(variance_mode[i])));
    if (r > 0.0f) ratio = r;
  }
  ratios[i] = ratio;
}

// The median of the sorted ratios before the NaNs (kernels::weight_scale's float_median).
__global__ void factor_kernel(const float* sorted, int64_t meshes, DeviceResults* results) {
  int64_t n = 0, hi = meshes;  // first NaN by bisection
  while (n < hi) {
    const int64_t mid = (n + hi) / 2;
    if (isnan(sorted[mid])) hi = mid;
    else n = mid + 1;
  }
  float factor = 1.0f;
  if (n == 1) factor = sorted[0];
  if (n > 1) factor = (n & 1) ? sorted[n / 2] : static_cast<float>((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0);
  results->weight_scale = factor;
  results->weight_meshes = n;
}

__global__ void rms_kernel(const float* variance, int64_t n, const DeviceResults* results, float* rms) {
  const float factor = static_cast<float>(results->weight_scale), factor2 = factor * factor;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    rms[i] = static_cast<float>(sqrt(static_cast<double>(variance[i] * factor2)));
  }
}

__global__ void unit_factor_kernel(DeviceResults* results) {
  results->weight_scale = 1.0;
  results->weight_meshes = 0;
}


// The RMS map of `variance` into maps.rms_map, rescaled against `image` (what maps were measured
// on) when `rescale`; the factor into *results.
void enqueue_weight_noise(GpuContext& gpu, WeightNoiseState& st, const float* image, MeshBackgroundState& maps,
                          DeviceResults* results, const kernels::MeshParams& params, const std::vector<float>& variance,
                          bool rescale) {
  const int64_t n = gpu.size(), nx = maps.nx, ny = maps.ny, meshes = nx * ny;
  if (n == 0) {
    unit_factor_kernel<<<1, 1, 0, gpu.stream>>>(results);
    IMFLOW_CUDA_CHECK_LAUNCH();
    return;
  }
  const auto bytes = static_cast<size_t>(n) * sizeof(float);
  st.staging.reserve(static_cast<size_t>(n));
  st.variance.reserve(static_cast<size_t>(n) + 4);
  std::memcpy(st.staging.data(), variance.data(), bytes);  // the slot's previous item has completed
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(st.variance.data(), st.staging.data(), bytes, cudaMemcpyHostToDevice, gpu.stream));
  if (rescale) {
    const auto np = static_cast<size_t>(meshes);
    st.grid.reserve(6 * np);
    st.ratios.reserve(2 * np);
    size_t sort_bytes = 0;
    IMFLOW_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, sort_bytes, st.ratios.data(), st.ratios.data() + np,
                                                     static_cast<int>(meshes), 0, 32, gpu.stream));
    st.sort_temp.reserve(sort_bytes + 16);
    float* grid = st.grid.data();
    const Geometry geometry{image, st.variance.data(), gpu.width, gpu.height, params.mesh_width, params.mesh_height, nx};
    variance_mesh_kernel<<<static_cast<unsigned>(meshes), kThreads, 0, gpu.stream>>>(geometry, grid, grid + np);
    IMFLOW_CUDA_CHECK_LAUNCH();
    enqueue_fill_and_filter(MeshGridBuffers{grid, grid + np, grid + 2 * np, grid + 3 * np, grid + 4 * np, grid + 5 * np},
                            nx, ny, params, gpu.stream);
    ratio_kernel<<<detail::blocks_for(meshes, 128), 128, 0, gpu.stream>>>(maps.sigma.data(), grid + 4 * np, meshes,
                                                                         st.ratios.data());
    IMFLOW_CUDA_CHECK_LAUNCH();
    IMFLOW_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(st.sort_temp.data(), sort_bytes, st.ratios.data(),
                                                     st.ratios.data() + np, static_cast<int>(meshes), 0, 32, gpu.stream));
    factor_kernel<<<1, 1, 0, gpu.stream>>>(st.ratios.data() + np, meshes, results);
  } else {
    unit_factor_kernel<<<1, 1, 0, gpu.stream>>>(results);
  }
  IMFLOW_CUDA_CHECK_LAUNCH();
  rms_kernel<<<detail::blocks_for(n, 256, 8192), 256, 0, gpu.stream>>>(st.variance.data(), n, results,
                                                                     maps.rms_map.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace

void weight_noise(GpuContext& gpu, const kernels::MeshParams& params, const std::vector<float>& variance, bool rescale) {
  DeviceGuard guard(gpu.device);
  if (!gpu.weight_noise) gpu.weight_noise = std::make_shared<WeightNoiseState>();
  gpu.has_weight_noise = true;
  gpu.weight_rescale = rescale;
  const float* image = gpu.has_detection ? gpu.detection.data() : gpu.image.data();  // as background_mesh read
  enqueue_weight_noise(gpu, *gpu.weight_noise, image, *gpu.mesh_background, gpu.results.data(), params, variance, rescale);
}

void measured_weight_noise(GpuContext& gpu, const kernels::MeshParams& params, const std::vector<float>& variance,
                           bool rescale) {
  DeviceGuard guard(gpu.device);
  MeasuredImageState& m = *gpu.measured;
  if (!m.weight_noise) m.weight_noise = std::make_shared<WeightNoiseState>();
  m.has_weight_noise = true;
  m.weight_rescale = rescale;
  enqueue_weight_noise(gpu, *m.weight_noise, gpu.image.data(), m.maps, m.results.data(), params, variance, rescale);
}

}  // namespace imflow::cuda
