// Kappa-sigma clipping by sorting once: the pixels' order-preserving keys are radix-sorted (CUB),
// so every iteration's kept set (lo, hi) is one contiguous range of the sorted keys, found by a
// k-ary search; its median is read directly and its moments reduced in float64 by one
// cooperative kernel that takes every decision on the device.
#include <cooperative_groups.h>

#include <cmath>
#include <cub/cub.cuh>

#include "cuda/background.hpp"
#include "cuda/device_common.cuh"

namespace imflow::cuda {
namespace {

namespace cg = cooperative_groups;
using detail::float_key;
using detail::key_float;

constexpr int kThreads = 512;
constexpr uint32_t kInvalidKey = 0xFFFFFFFFu;  // NaN/Inf: sorts after every finite value

// keys[i] = order-preserving key of image[i]; non-finite pixels get kInvalidKey.
__global__ void __launch_bounds__(kThreads) keys_kernel(const float* __restrict__ image, int64_t n,
                                                        uint32_t* __restrict__ keys) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = image[i];
    keys[i] = isfinite(v) ? float_key(v) : kInvalidKey;
  }
}

// The first index in [begin, end) whose key satisfies `pred` (false...false true...true), or
// `end`. Every thread of the block takes part and gets the same answer: each round, the block
// samples kThreads evenly spaced keys and keeps the gap where pred turns true.
template <typename Pred>
__device__ int64_t block_partition_point(const uint32_t* __restrict__ keys, int64_t begin, int64_t end, Pred pred) {
  while (end - begin > kThreads) {
    const int64_t step = (end - begin + kThreads - 1) / kThreads;
    const int64_t i = begin + static_cast<int64_t>(threadIdx.x) * step;
    const int falses = __syncthreads_count(i < end && !pred(__ldcg(keys + i)));
    if (falses == 0) return begin;  // keys[begin] already satisfies pred
    const int64_t last_false = begin + static_cast<int64_t>(falses - 1) * step;
    const int64_t next_sample = begin + static_cast<int64_t>(falses) * step;
    begin = last_false + 1;
    end = next_sample < end ? next_sample : end;
  }
  const int64_t i = begin + threadIdx.x;
  return begin + __syncthreads_count(i < end && !pred(__ldcg(keys + i)));
}

using BlockReduceD = cub::BlockReduce<double, kThreads>;

struct Params {
  const uint32_t* keys;  // sorted
  int64_t n;
  double kappa;
  int max_iters;
  double* partials;  // [2 parities][2 sums][gridDim.x]
  DeviceResults* results;
};

// Sum of the per-block partials, in the same order in every block (identical results).
__device__ double sum_partials(const double* part, typename BlockReduceD::TempStorage& storage, double* shared) {
  double s = 0.0;
  for (int b = threadIdx.x; b < static_cast<int>(gridDim.x); b += kThreads) s += __ldcg(part + b);
  s = BlockReduceD(storage).Sum(s);
  if (threadIdx.x == 0) *shared = s;
  __syncthreads();
  s = *shared;
  __syncthreads();
  return s;
}

__global__ void __launch_bounds__(kThreads) clip_kernel(Params p) {
  cg::grid_group grid = cg::this_grid();
  __shared__ typename BlockReduceD::TempStorage storage;
  __shared__ double shared_sum;
  const bool writer = blockIdx.x == 0 && threadIdx.x == 0;
  const int max_iters = p.max_iters < 1 ? 1 : p.max_iters;
  const uint32_t* keys = p.keys;

  const int64_t valid = block_partition_point(keys, 0, p.n, [](uint32_t k) { return k == kInvalidKey; });
  if (writer) {
    p.results->valid = static_cast<long long>(valid);
    p.results->median = NAN;
    p.results->std = NAN;
    p.results->iterations = 0;
    p.results->kept = 0;
  }
  double lo = -INFINITY, hi = INFINITY;  // kept set: finite values strictly inside (lo, hi)
  int64_t begin = 0, end = valid;
  int64_t n_prev = 0;
  for (int iter = 0; iter < max_iters; ++iter) {
    if (iter > 0) {
      // The bounds only narrow, so the new range lies inside the previous one.
      const double l = lo, h = hi;
      begin = block_partition_point(keys, begin, end, [l](uint32_t k) { return static_cast<double>(key_float(k)) > l; });
      end = block_partition_point(keys, begin, end, [h](uint32_t k) { return static_cast<double>(key_float(k)) >= h; });
    }
    const int64_t n = end - begin;
    if (n == 0 || n == n_prev) break;  // everything clipped (or nothing finite) / nothing clipped

    const float v0 = key_float(__ldcg(keys + begin + (n - 1) / 2));
    const double median =
        n % 2 == 1 ? static_cast<double>(v0)
                   : (static_cast<double>(v0) + static_cast<double>(key_float(__ldcg(keys + begin + n / 2)))) / 2.0;
    // Moments shifted by v0 (|mean - median| <= std): the float64 sums keep full precision.
    double s1 = 0.0, s2 = 0.0;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
    for (int64_t i = begin + static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < end; i += stride) {
      const double t = static_cast<double>(key_float(__ldcg(keys + i))) - static_cast<double>(v0);
      s1 += t;
      s2 += t * t;
    }
    s1 = BlockReduceD(storage).Sum(s1);
    __syncthreads();
    s2 = BlockReduceD(storage).Sum(s2);
    // Partials alternate parity: a block writing iteration i+2's partials has passed the grid
    // sync of iteration i+1, which every block reaches only after reading iteration i's.
    double* part = p.partials + (iter & 1) * 2 * gridDim.x;
    if (threadIdx.x == 0) {
      part[blockIdx.x] = s1;
      part[gridDim.x + blockIdx.x] = s2;
    }
    grid.sync();
    s1 = sum_partials(part, storage, &shared_sum);
    s2 = sum_partials(part + gridDim.x, storage, &shared_sum);

    const double count = static_cast<double>(n);
    const double mean_offset = s1 / count;
    double variance = s2 / count - mean_offset * mean_offset;
    if (variance < 0.0) variance = 0.0;
    const double std = sqrt(variance);
    if (writer) {
      p.results->median = median;
      p.results->std = std;
      p.results->iterations = iter + 1;
      p.results->kept = static_cast<long long>(n);
    }
    if (std == 0.0) break;
    const double new_lo = median - p.kappa * std;
    const double new_hi = median + p.kappa * std;
    lo = new_lo > lo ? new_lo : lo;
    hi = new_hi < hi ? new_hi : hi;
    n_prev = n;
  }
}

int cooperative_grid(const GpuContext& gpu) {
  int per_sm = 0;
  IMFLOW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, clip_kernel, kThreads, 0));
  if (per_sm < 1) throw CudaError("background: kernel cannot be resident", cudaErrorLaunchOutOfResources);
  return gpu.sm_count * (per_sm < 2 ? per_sm : 2);  // at most 2 per SM: other slots' kernels find room
}

size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

void background(GpuContext& gpu, double kappa, int max_iters) {
  background_of(gpu, kappa, max_iters, gpu.has_detection ? gpu.detection.data() : gpu.image.data(), gpu.results.data());
  gpu.has_background = true;
}

void background_of(GpuContext& gpu, double kappa, int max_iters, const float* source, DeviceResults* results) {
  DeviceGuard guard(gpu.device);
  const int64_t n = gpu.size();
  const int grid = cooperative_grid(gpu);

  // background_work: [keys A | keys B | partials]; CUB's temporary storage in gpu.scratch.
  const size_t key_bytes = align_up(static_cast<size_t>(n > 0 ? n : 1) * sizeof(uint32_t));
  const size_t part_bytes = static_cast<size_t>(grid) * 4 * sizeof(double);
  gpu.background_work.reserve(2 * key_bytes + part_bytes);
  unsigned char* base = gpu.background_work.data();
  cub::DoubleBuffer<uint32_t> keys(reinterpret_cast<uint32_t*>(base), reinterpret_cast<uint32_t*>(base + key_bytes));

  if (n > 0) {
    keys_kernel<<<detail::blocks_for(n, kThreads, static_cast<int64_t>(gpu.sm_count) * 8), kThreads, 0, gpu.stream>>>(
        source, n, keys.Current());
    IMFLOW_CUDA_CHECK_LAUNCH();
    size_t temp_bytes = 0;
    IMFLOW_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, keys, n, 0, 32, gpu.stream));
    gpu.scratch.reserve(temp_bytes);
    IMFLOW_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(gpu.scratch.data(), temp_bytes, keys, n, 0, 32, gpu.stream));
  }

  Params p{};
  p.keys = keys.Current();
  p.n = n;
  p.kappa = kappa;
  p.max_iters = max_iters;
  p.partials = reinterpret_cast<double*>(base + 2 * key_bytes);
  p.results = results;
  void* args[] = {&p};
  IMFLOW_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(clip_kernel), dim3(grid),
                                                dim3(kThreads), args, 0, gpu.stream));
}

}  // namespace imflow::cuda
