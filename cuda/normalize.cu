// GPU min-max / z-score normalization: a grid reduction into per-block partials (deterministic
// order), a one-block finalize that computes the mapping exactly as the CPU kernel does
// (src/kernels/normalize.cpp), and an element-wise apply in double.
#include <algorithm>
#include <cfloat>

#include "cuda/normalize.hpp"

namespace imflow::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 512;

struct Partial {
  double lo, hi, sum;
  long long count;
};

// The mapping of this normalize step (not composed), read by the later passes.
struct Mapping {
  double offset, scale;
  long long finite;
  int constant;
};

__device__ __forceinline__ bool finite(float x) { return isfinite(x); }

// Block-wide min / max / sum / count of the threads' partials (blockDim.x == kThreads); the
// result is valid in thread 0.
__device__ Partial block_reduce(Partial mine) {
  __shared__ double s_lo[kThreads], s_hi[kThreads], s_sum[kThreads];
  __shared__ long long s_count[kThreads];
  s_lo[threadIdx.x] = mine.lo;
  s_hi[threadIdx.x] = mine.hi;
  s_sum[threadIdx.x] = mine.sum;
  s_count[threadIdx.x] = mine.count;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      s_lo[threadIdx.x] = fmin(s_lo[threadIdx.x], s_lo[threadIdx.x + w]);
      s_hi[threadIdx.x] = fmax(s_hi[threadIdx.x], s_hi[threadIdx.x + w]);
      s_sum[threadIdx.x] += s_sum[threadIdx.x + w];
      s_count[threadIdx.x] += s_count[threadIdx.x + w];
    }
    __syncthreads();
  }
  return {s_lo[0], s_hi[0], s_sum[0], s_count[0]};
}

__global__ void stats_kernel(const float* __restrict__ image, long long n, Partial* __restrict__ partials) {
  double lo = DBL_MAX, hi = -DBL_MAX, sum = 0.0;
  long long count = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const float x = image[i];
    if (!finite(x)) continue;
    lo = fmin(lo, (double)x);
    hi = fmax(hi, (double)x);
    sum += x;
    ++count;
  }
  const Partial total = block_reduce({lo, hi, sum, count});
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// One block: reduce the partials; minmax -> final mapping; zscore -> the mean (std next pass).
__global__ void stats_finalize(const Partial* __restrict__ partials, int blocks, bool zscore, Mapping* mapping) {
  double lo = DBL_MAX, hi = -DBL_MAX, sum = 0.0;
  long long count = 0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    lo = fmin(lo, partials[b].lo);
    hi = fmax(hi, partials[b].hi);
    sum += partials[b].sum;
    count += partials[b].count;
  }
  const Partial t = block_reduce({lo, hi, sum, count});
  if (threadIdx.x == 0) {
    Mapping m{0.0, 1.0, t.count, 0};
    if (m.finite > 0) {
      if (zscore) m = {t.sum / (double)m.finite, 0.0, m.finite, 0};
      else m = {t.lo, t.hi - t.lo, m.finite, 0};
    }
    *mapping = m;
  }
}

__global__ void squares_kernel(const float* __restrict__ image, long long n, const Mapping* mapping,
                               double* __restrict__ partials) {
  const double mean = mapping->offset;
  double acc = 0.0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const float x = image[i];
    if (finite(x)) acc += (x - mean) * (x - mean);
  }
  __shared__ double s[kThreads];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = s[0];
}

__global__ void squares_finalize(const double* __restrict__ partials, int blocks, Mapping* mapping) {
  __shared__ double s[kThreads];
  double acc = 0.0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) acc += partials[b];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0 && mapping->finite > 0) mapping->scale = sqrt(s[0] / (double)mapping->finite);
}

// Record the mapping in the results (composing with an earlier normalize of this item).
__global__ void record_mapping(const Mapping* mapping, DeviceResults* results) {
  const double o2 = mapping->offset, s2 = mapping->scale;
  if (results->norm_set > 0) {
    results->norm_offset = o2 * results->norm_scale + results->norm_offset;
    results->norm_scale = s2 * results->norm_scale;
  } else {
    results->norm_offset = o2;
    results->norm_scale = s2;
  }
  results->norm_set += 1;
}

// Apply the mapping to the finite pixels; with zero_nonfinite set the others to 0 and count them.
__global__ void apply_kernel(float* __restrict__ image, long long n, const Mapping* mapping, bool zero_nonfinite,
                             DeviceResults* results) {
  const Mapping m = *mapping;
  unsigned long long zeroed = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const float x = image[i];
    if (!finite(x)) {
      if (zero_nonfinite) image[i] = 0.0f, ++zeroed;
      continue;
    }
    image[i] = m.scale == 0.0 ? 0.0f : (float)((x - m.offset) / m.scale);  // divide, as the CPU does
  }
  if (zeroed > 0) atomicAdd(&results->zeroed_pixels, zeroed);
}

}  // namespace

void normalize(GpuContext& gpu, bool zscore, bool zero_nonfinite) {
  DeviceGuard guard(gpu.device);
  const long long n = gpu.size();
  const int blocks = static_cast<int>(std::max<long long>(1, std::min<long long>(kMaxBlocks, (n + kThreads * 8 - 1) / (kThreads * 8))));
  // Scratch: [Mapping | partials]; stream order keeps it private to this step.
  const size_t bytes = 64 + static_cast<size_t>(kMaxBlocks) * sizeof(Partial);
  gpu.scratch.reserve(bytes);
  auto* mapping = reinterpret_cast<Mapping*>(gpu.scratch.data());
  auto* partials = reinterpret_cast<Partial*>(gpu.scratch.data() + 64);
  stats_kernel<<<blocks, kThreads, 0, gpu.stream>>>(gpu.image.data(), n, partials);
  IMFLOW_CUDA_CHECK_LAUNCH();
  stats_finalize<<<1, kThreads, 0, gpu.stream>>>(partials, blocks, zscore, mapping);
  IMFLOW_CUDA_CHECK_LAUNCH();
  if (zscore) {
    auto* sq = reinterpret_cast<double*>(partials);
    squares_kernel<<<blocks, kThreads, 0, gpu.stream>>>(gpu.image.data(), n, mapping, sq);
    IMFLOW_CUDA_CHECK_LAUNCH();
    squares_finalize<<<1, kThreads, 0, gpu.stream>>>(sq, blocks, mapping);
    IMFLOW_CUDA_CHECK_LAUNCH();
  }
  record_mapping<<<1, 1, 0, gpu.stream>>>(mapping, gpu.results.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  apply_kernel<<<blocks, kThreads, 0, gpu.stream>>>(gpu.image.data(), n, mapping, zero_nonfinite, gpu.results.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  gpu.has_normalization = true;
  gpu.image_modified = true;
}

}  // namespace imflow::cuda
