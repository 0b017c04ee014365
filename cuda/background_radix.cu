// Kappa-sigma clipping without sorting (the first GPU version, kept to compare against the sorted
// one in cuda/background.cu): one persistent cooperative kernel; each pass selects the exact median
// by radix selection over order-preserving keys restricted to the current bounds (L, H), then
// accumulates shifted moments in float64; every decision is taken on the device.
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
constexpr int kBits = 12;  // radix digit: 4096 bins, at most 3 passes for 32-bit keys
constexpr int kBins = 1 << kBits;
constexpr int kBinsPerThread = kBins / kThreads;
constexpr int kMaxPasses = 3;

struct Params {
  const float* image;
  int64_t n;
  double kappa;
  int max_iters;
  unsigned long long* hist;  // [2 parities][kMaxPasses][kBins]
  double* part_s1;           // [gridDim.x]
  double* part_s2;
  uint32_t* part_min;
  DeviceResults* results;
};

// Shared-memory histogram increment, aggregated over the lanes that hit the same bin (real
// images put most pixels in a few bins, where plain atomics would serialize).
__device__ __forceinline__ void hist_add(uint32_t* h, uint32_t bin, bool in) {
  const unsigned active = __activemask();
  const unsigned peers = __match_any_sync(active, in ? bin : 0xFFFFFFFFu);
  if (in && static_cast<int>(threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(&h[bin], __popc(peers));
}

using BlockScan = cub::BlockScan<unsigned long long, kThreads>;
using BlockReduceD = cub::BlockReduce<double, kThreads>;
using BlockReduceU = cub::BlockReduce<uint32_t, kThreads>;

struct Selection {
  unsigned long long total;   // values in the histogram
  uint32_t bin;               // bin holding rank
  unsigned long long before;  // values in lower bins
  unsigned long long count;   // values in that bin
};

// Every block runs this on the same global histogram and gets the same answer.
__device__ Selection select_bin(const unsigned long long* hist, unsigned long long rank,
                                typename BlockScan::TempStorage& storage, Selection& shared) {
  unsigned long long bins[kBinsPerThread];
  unsigned long long sum = 0;
#pragma unroll
  for (int j = 0; j < kBinsPerThread; ++j) {
    bins[j] = __ldcg(hist + threadIdx.x * kBinsPerThread + j);  // L2: written by other blocks
    sum += bins[j];
  }
  unsigned long long before = 0, total = 0;
  BlockScan(storage).ExclusiveSum(sum, before, total);
  if (threadIdx.x == 0) {
    shared.total = total;
    shared.bin = 0;
    shared.before = 0;
    shared.count = 0;
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kBinsPerThread; ++j) {
    if (rank >= before && rank < before + bins[j]) {
      shared.bin = threadIdx.x * kBinsPerThread + j;
      shared.before = before;
      shared.count = bins[j];
    }
    before += bins[j];
  }
  __syncthreads();
  const Selection result = shared;
  __syncthreads();
  return result;
}

__global__ void __launch_bounds__(kThreads, 2) kappa_sigma_kernel(Params p) {
  cg::grid_group grid = cg::this_grid();
  __shared__ uint32_t block_hist[kBins];
  __shared__ union {
    typename BlockScan::TempStorage scan;
    typename BlockReduceD::TempStorage reduce_d;
    typename BlockReduceU::TempStorage reduce_u;
  } storage;
  __shared__ Selection selection;
  __shared__ double shared_d[2];
  __shared__ uint32_t shared_u;

  const int64_t global_thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t grid_threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const bool writer = blockIdx.x == 0 && threadIdx.x == 0;
  const int max_iters = p.max_iters < 1 ? 1 : p.max_iters;

  double lo = -INFINITY, hi = INFINITY;  // kept set: finite values strictly inside (lo, hi)
  unsigned long long n_prev = 0;

  for (int iter = 0; iter < max_iters; ++iter) {
    unsigned long long* hist = p.hist + (iter & 1) * kMaxPasses * kBins;
    // Zero the other parity for the next iteration: its last readers passed a grid sync.
    unsigned long long* next = p.hist + ((iter + 1) & 1) * kMaxPasses * kBins;
    for (int64_t i = global_thread; i < kMaxPasses * kBins; i += grid_threads) next[i] = 0;

    // Key range of the kept set; digits are taken from key - klo, so later iterations (narrow
    // bounds) need 2 passes and spread over many bins.
    uint32_t klo = 0, span = 0xFFFFFFFFu;
    if (iter > 0) {
      klo = float_key(__double2float_rd(lo));
      span = float_key(__double2float_ru(hi)) - klo;
    }
    const int bits = span == 0 ? 0 : 32 - __clz(span);
    const int passes = bits <= kBits ? 1 : (bits + kBits - 1) / kBits;

    unsigned long long n = 0, rank = 0, equal = 0;
    uint32_t prefix = 0;
    bool stop = false;
    for (int pass = 0; pass < passes; ++pass) {
      const int top = bits - kBits * pass;  // bits at and above `top` are fixed by `prefix`
      const int shift = top - kBits > 0 ? top - kBits : 0;
      const uint32_t digit_mask = (1u << (top - shift)) - 1u;
      for (int i = threadIdx.x; i < kBins; i += kThreads) block_hist[i] = 0;
      __syncthreads();
      detail::for_each_value(p.image, p.n, [&](float v) {
        const double d = v;
        const uint32_t rel = float_key(v) - klo;
        bool in = isfinite(v) && d > lo && d < hi;
        if (pass > 0) in = in && (rel >> top) == prefix;  // top < 32 when pass > 0
        hist_add(block_hist, (rel >> shift) & digit_mask, in);
      });
      __syncthreads();
      unsigned long long* global_hist = hist + pass * kBins;
      for (int i = threadIdx.x; i < kBins; i += kThreads)
        if (block_hist[i] != 0) atomicAdd(global_hist + i, static_cast<unsigned long long>(block_hist[i]));
      grid.sync();

      const Selection s = select_bin(global_hist, rank, storage.scan, selection);
      if (pass == 0) {
        n = s.total;
        if (iter == 0 && writer) p.results->valid = static_cast<long long>(n);
        if (n == 0 || n == n_prev) {  // nothing left (all NaN, or everything clipped) / nothing clipped
          if (iter == 0 && writer) {
            p.results->median = NAN;
            p.results->std = NAN;
            p.results->iterations = 0;
            p.results->kept = 0;
          }
          stop = true;
          break;
        }
        rank = (n - 1) / 2;
        // select_bin above ran with rank 0; select again now that n is known (same data).
        const Selection t = select_bin(global_hist, rank, storage.scan, selection);
        prefix = t.bin;
        rank -= t.before;
        equal = t.count;
      } else {
        prefix = (prefix << (top - shift)) | s.bin;
        rank -= s.before;
        equal = s.count;
      }
    }
    if (stop) break;

    // Lower middle value; the upper one (n even) is the same value when it has more copies,
    // else the smallest kept key above it, found in the moments pass.
    const uint32_t key0 = klo + prefix;
    const float v0 = key_float(key0);
    const bool need_next = (n % 2 == 0) && rank + 1 >= equal;
    const double shift = v0;  // |mean - median| <= std: shifted sums keep full precision
    double s1 = 0.0, s2 = 0.0;
    uint32_t next_key = 0xFFFFFFFFu;
    detail::for_each_value(p.image, p.n, [&](float v) {
      const double d = v;
      if (isfinite(v) && d > lo && d < hi) {
        const double t = d - shift;
        s1 += t;
        s2 += t * t;
        const uint32_t k = float_key(v);
        if (need_next && k > key0 && k < next_key) next_key = k;
      }
    });
    s1 = BlockReduceD(storage.reduce_d).Sum(s1);
    __syncthreads();
    s2 = BlockReduceD(storage.reduce_d).Sum(s2);
    __syncthreads();
    next_key = BlockReduceU(storage.reduce_u).Reduce(next_key, ::cuda::minimum<>{});
    if (threadIdx.x == 0) {
      p.part_s1[blockIdx.x] = s1;
      p.part_s2[blockIdx.x] = s2;
      p.part_min[blockIdx.x] = next_key;
    }
    grid.sync();

    // Every block reduces the per-block partials in the same order: identical results.
    s1 = 0.0;
    s2 = 0.0;
    next_key = 0xFFFFFFFFu;
    for (int b = threadIdx.x; b < static_cast<int>(gridDim.x); b += kThreads) {
      s1 += __ldcg(p.part_s1 + b);
      s2 += __ldcg(p.part_s2 + b);
      const uint32_t k = __ldcg(p.part_min + b);
      next_key = k < next_key ? k : next_key;
    }
    __syncthreads();
    s1 = BlockReduceD(storage.reduce_d).Sum(s1);
    __syncthreads();
    s2 = BlockReduceD(storage.reduce_d).Sum(s2);
    __syncthreads();
    next_key = BlockReduceU(storage.reduce_u).Reduce(next_key, ::cuda::minimum<>{});
    if (threadIdx.x == 0) {
      shared_d[0] = s1;
      shared_d[1] = s2;
      shared_u = next_key;
    }
    __syncthreads();
    s1 = shared_d[0];
    s2 = shared_d[1];
    next_key = shared_u;
    __syncthreads();

    const double count = static_cast<double>(n);
    const double v1 = need_next ? static_cast<double>(key_float(next_key)) : static_cast<double>(v0);
    const double median = (n % 2 == 1) ? static_cast<double>(v0) : (static_cast<double>(v0) + v1) / 2.0;
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

struct Launch {
  int grid = 0;
};

// Blocks per SM kept at 2 at most so that other slots' kernels still find room.
int cooperative_grid(const GpuContext& gpu) {
  int per_sm = 0;
  IMFLOW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kappa_sigma_kernel, kThreads, 0));
  if (per_sm < 1) throw CudaError("background: kernel cannot be resident", cudaErrorLaunchOutOfResources);
  return gpu.sm_count * (per_sm < 2 ? per_sm : 2);
}

}  // namespace

void background_radix(GpuContext& gpu, double kappa, int max_iters) {
  DeviceGuard guard(gpu.device);
  static_assert(kBins % kThreads == 0);
  const int grid = cooperative_grid(gpu);
  const size_t hist_bytes = 2 * kMaxPasses * kBins * sizeof(unsigned long long);
  const size_t part_bytes = static_cast<size_t>(grid) * (2 * sizeof(double) + sizeof(uint32_t));
  gpu.background_work.reserve(hist_bytes + part_bytes);
  unsigned char* base = gpu.background_work.data();

  Params p{};
  p.image = gpu.image.data();
  p.n = gpu.size();
  p.kappa = kappa;
  p.max_iters = max_iters;
  p.hist = reinterpret_cast<unsigned long long*>(base);
  p.part_s1 = reinterpret_cast<double*>(base + hist_bytes);
  p.part_s2 = p.part_s1 + grid;
  p.part_min = reinterpret_cast<uint32_t*>(p.part_s2 + grid);
  p.results = gpu.results.data();

  IMFLOW_CUDA_CHECK(cudaMemsetAsync(p.hist, 0, hist_bytes, gpu.stream));
  void* args[] = {&p};
  IMFLOW_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kappa_sigma_kernel), dim3(grid),
                                                dim3(kThreads), args, 0, gpu.stream));
  gpu.has_background = true;
}

}  // namespace imflow::cuda
