// Union-find CCL (Playne & Hawick style): every union links the larger root to the smaller with
// atomicMin, so a component's root is its first pixel in raster order; an in-place inclusive
// scan of the root flags then numbers the components exactly as scipy.ndimage.label does.
#include <cub/cub.cuh>
#include <limits>
#include <stdexcept>

#include "cuda/device_common.cuh"
#include "cuda/label.hpp"

namespace imflow::cuda {
namespace {

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;

struct Grid2D {
  const uint8_t* mask;
  int32_t* labels;
  int width;
  int height;
};

__device__ __forceinline__ int32_t find_root(const int32_t* labels, int32_t i) {
  int32_t parent = __ldcg(labels + i);
  while (parent != i) {
    i = parent;
    parent = __ldcg(labels + i);
  }
  return i;
}

// Join the trees of a and b; the larger root is re-pointed to the smaller one.
__device__ void unite(int32_t* labels, int32_t a, int32_t b) {
  bool done = false;
  while (!done) {
    a = find_root(labels, a);
    b = find_root(labels, b);
    if (a < b) {
      const int32_t old = atomicMin(labels + b, a);
      done = old == b;
      b = old;
    } else if (b < a) {
      const int32_t old = atomicMin(labels + a, b);
      done = old == a;
      a = old;
    } else {
      done = true;
    }
  }
}

// Loops over the pixels of the image with 2-D blocks (grid-stride in y for tall images).
#define IMFLOW_FOR_EACH_PIXEL(g)                                                  \
  const int x = blockIdx.x * kBlockX + threadIdx.x;                               \
  if (x >= (g).width) return;                                                     \
  for (int y = blockIdx.y * kBlockY + threadIdx.y; y < (g).height; y += gridDim.y * kBlockY)

template <int Connectivity>
__global__ void init_kernel(Grid2D g) {
  IMFLOW_FOR_EACH_PIXEL(g) {
    const int32_t i = y * g.width + x;
    int32_t parent = -1;
    if (g.mask[i]) {
      parent = i;
      if (x > 0 && g.mask[i - 1]) {
        parent = i - 1;
      } else if (y > 0 && g.mask[i - g.width]) {
        parent = i - g.width;
      } else if (Connectivity == 8 && y > 0 && x > 0 && g.mask[i - g.width - 1]) {
        parent = i - g.width - 1;
      } else if (Connectivity == 8 && y > 0 && x + 1 < g.width && g.mask[i - g.width + 1]) {
        parent = i - g.width + 1;
      }
    }
    g.labels[i] = parent;
  }
}

template <int Connectivity>
__global__ void merge_kernel(Grid2D g) {
  IMFLOW_FOR_EACH_PIXEL(g) {
    const int32_t i = y * g.width + x;
    if (!g.mask[i]) continue;
    const bool left = x > 0 && g.mask[i - 1];
    if (left) unite(g.labels, i, i - 1);  // already joined by init; cheap
    if (y == 0) continue;
    const bool up = g.mask[i - g.width];
    if (up) unite(g.labels, i, i - g.width);
    if (Connectivity == 8) {
      if (x > 0 && g.mask[i - g.width - 1] && !left && !up) unite(g.labels, i, i - g.width - 1);
      if (x + 1 < g.width && g.mask[i - g.width + 1] && !up) unite(g.labels, i, i - g.width + 1);
    }
  }
}

// labels[i] = root; rank[i] = 1 for roots (the scan input).
__global__ void compress_kernel(Grid2D g, int32_t* rank) {
  IMFLOW_FOR_EACH_PIXEL(g) {
    const int32_t i = y * g.width + x;
    int32_t root = -1;
    if (g.mask[i]) {
      root = find_root(g.labels, i);
      g.labels[i] = root;
    }
    rank[i] = root == i ? 1 : 0;
  }
}

__global__ void relabel_kernel(Grid2D g, const int32_t* rank, DeviceResults* results) {
  IMFLOW_FOR_EACH_PIXEL(g) {
    const int32_t i = y * g.width + x;
    const int32_t root = g.labels[i];
    g.labels[i] = root >= 0 ? rank[root] : 0;
    if (x == g.width - 1 && y == g.height - 1) results->nlabels = rank[i];
  }
}

}  // namespace

void label(GpuContext& gpu, int connectivity) {
  if (connectivity != 4 && connectivity != 8)
    throw std::invalid_argument("cuda::label: connectivity must be 4 or 8");
  if (!gpu.has_mask) throw std::logic_error("cuda::label: the segment step has not run on the GPU");
  const int64_t n = gpu.size();
  if (n >= std::numeric_limits<int32_t>::max())
    throw std::length_error("cuda::label: images of 2^31 pixels or more are not supported on the GPU");
  DeviceGuard guard(gpu.device);
  gpu.has_labels = true;
  gpu.labels.reserve(static_cast<size_t>(n) + 1);
  gpu.label_rank.reserve(static_cast<size_t>(n) + 1);
  if (n == 0) return;  // nlabels stays 0 (results were reset at upload)

  const Grid2D g{gpu.mask.data(), gpu.labels.data(), static_cast<int>(gpu.width), static_cast<int>(gpu.height)};
  const dim3 block(kBlockX, kBlockY);
  const int64_t rows = (gpu.height + kBlockY - 1) / kBlockY;
  const dim3 grid(static_cast<unsigned>((gpu.width + kBlockX - 1) / kBlockX),
                  static_cast<unsigned>(rows < 65535 ? rows : 65535));
  if (connectivity == 4) {
    init_kernel<4><<<grid, block, 0, gpu.stream>>>(g);
    IMFLOW_CUDA_CHECK_LAUNCH();
    merge_kernel<4><<<grid, block, 0, gpu.stream>>>(g);
  } else {
    init_kernel<8><<<grid, block, 0, gpu.stream>>>(g);
    IMFLOW_CUDA_CHECK_LAUNCH();
    merge_kernel<8><<<grid, block, 0, gpu.stream>>>(g);
  }
  IMFLOW_CUDA_CHECK_LAUNCH();
  int32_t* rank = gpu.label_rank.data();
  compress_kernel<<<grid, block, 0, gpu.stream>>>(g, rank);
  IMFLOW_CUDA_CHECK_LAUNCH();

  size_t temp_bytes = 0;
  IMFLOW_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, rank, rank, static_cast<int>(n), gpu.stream));
  gpu.scratch.reserve(temp_bytes);
  IMFLOW_CUDA_CHECK(
      cub::DeviceScan::InclusiveSum(gpu.scratch.data(), temp_bytes, rank, rank, static_cast<int>(n), gpu.stream));
  relabel_kernel<<<grid, block, 0, gpu.stream>>>(g, rank, gpu.results.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
