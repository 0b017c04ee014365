// SEP's per-mesh background statistics on the device (cuda/mesh_stats.hpp): one block per mesh
// computes the clipped mean and sigma, the histogram and the mode (cuda/mesh_mode.cuh).
// Compiled with --fmad=false (cuda/CMakeLists.txt) so float expressions round as on the CPU.
#include "cuda/mesh_stats.hpp"

#include "cuda/mesh_mode.cuh"

namespace imflow::cuda {
namespace {

using mesh::kBins;
using mesh::kThreads;
using mesh::Moments;

__device__ __forceinline__ bool usable(float v) { return isfinite(v) && v > -mesh::kBig; }

struct MeshGeometry {
  const float* image;
  int64_t width, height, mesh_width, mesh_height, nx;
};

// One block per mesh: kernels::estimate_mesh.
__global__ void __launch_bounds__(kThreads)
    mesh_stats_kernel(MeshGeometry g, float* back, float* sigma, DeviceResults* results) {
  __shared__ int histo[kBins];
  __shared__ mesh::BlockStorage storage;

  const int64_t mesh = blockIdx.x;
  const mesh::MeshRect rect(mesh, g.nx, g.width, g.height, g.mesh_width, g.mesh_height);
  const int64_t count = rect.count();
  auto pixel = [&](int64_t k) { return g.image[rect.index(k)]; };

  // backstat, first pass: the valid pixels.
  Moments m{0.0, 0.0, 0};
  for (int64_t k = threadIdx.x; k < count; k += kThreads) {
    const float v = pixel(k);
    if (!usable(v)) continue;
    const double d = v;
    m.a += d;
    m.b += d * d;
    ++m.n;
  }
  const Moments first = mesh::block_sum(m, storage);
  if (threadIdx.x == 0) atomicAdd(reinterpret_cast<unsigned long long*>(&results->valid), first.n);
  if (static_cast<float>(first.n) < static_cast<float>(static_cast<double>(count) * 0.5)) {
    if (threadIdx.x == 0) {
      back[mesh] = sigma[mesh] = kernels::kDroppedMesh;
      atomicAdd(reinterpret_cast<unsigned long long*>(&results->meshes_dropped), 1ull);
    }
    return;
  }
  double mean = first.a / static_cast<double>(first.n);
  double var = first.b / static_cast<double>(first.n) - mean * mean;
  double sd = var > 0.0 ? sqrt(var) : 0.0;
  const float lcut = static_cast<float>(mean - 2.0 * sd), hcut = static_cast<float>(mean + 2.0 * sd);

  // Second pass inside mean +- 2 sigma.
  m = Moments{0.0, 0.0, 0};
  for (int64_t k = threadIdx.x; k < count; k += kThreads) {
    const float v = pixel(k);
    if (!(v <= hcut && v >= lcut)) continue;
    const double d = v;
    m.a += d;
    m.b += d * d;
    ++m.n;
  }
  const Moments second = mesh::block_sum(m, storage);
  mean = second.a / static_cast<double>(second.n);
  var = second.b / static_cast<double>(second.n) - mean * mean;
  sd = var > 0.0 ? sqrt(var) : 0.0;
  const mesh::Quantisation q(mean, sd, second.n);

  // backhisto.
  for (int b = threadIdx.x; b < kBins; b += kThreads) histo[b] = 0;
  __syncthreads();
  for (int64_t k = threadIdx.x; k < count; k += kThreads) {
    const int b = q.bin(pixel(k));
    if (b >= 0) atomicAdd(&histo[b], 1);
  }
  __syncthreads();

  const mesh::MeshMode mode = mesh::histogram_mode(histo, q.nlevels, static_cast<float>(mean), q.qzero, q.qscale, storage);
  if (threadIdx.x == 0) {
    back[mesh] = mode.back;
    sigma[mesh] = mode.sigma;
  }
}

}  // namespace

void enqueue_mesh_stats(const float* image, int64_t width, int64_t height, const kernels::MeshParams& params,
                        int64_t nx, int64_t ny, float* back, float* sigma, DeviceResults* results,
                        cudaStream_t stream) {
  const MeshGeometry geometry{image, width, height, params.mesh_width, params.mesh_height, nx};
  mesh_stats_kernel<<<static_cast<unsigned>(nx * ny), kThreads, 0, stream>>>(geometry, back, sigma, results);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
