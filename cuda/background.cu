// Kappa-sigma clipping by sorting once: the pixels' order-preserving keys are radix-sorted (CUB),
// so every iteration's kept set (lo, hi) is one contiguous range of the sorted keys. The sorted
// keys are cut into at most kMaxChunks chunks whose sums (about each chunk's first value) are
// reduced once by the whole grid; one block then runs every iteration from those chunks: the
// chunks' first keys (in shared memory) place the range's two ends, four warps each count and sum
// the keys of the chunk each end falls in, the other warps sum the whole chunks between, and one
// barrier per pass hands every thread the same totals. The host never waits.
#include <cmath>
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>

#include "cuda/background.hpp"
#include "cuda/device_common.cuh"
#include "cuda/warp_team.cuh"

namespace imflow::cuda {
namespace {

using detail::float_key;
using detail::key_float;

constexpr int kKeyThreads = 512;
constexpr int kChunkThreads = 256;
constexpr int kClipThreads = 512;
constexpr int64_t kMaxChunks = 2048;             // 20 bytes each in the clip block's shared memory
constexpr int64_t kMinChunk = 1024;
constexpr uint32_t kInvalidKey = 0xFFFFFFFFu;  // NaN/Inf: sorts after every finite value

// keys[i] = order-preserving key of image[i]; non-finite pixels get kInvalidKey.
__global__ void __launch_bounds__(kKeyThreads) keys_kernel(const float* __restrict__ image, int64_t n,
                                                           uint32_t* __restrict__ keys) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = image[i];
    keys[i] = isfinite(v) ? float_key(v) : kInvalidKey;
  }
}

// Per chunk of `chunk` sorted keys: its first key and, over its finite values v, the sums of
// (v - first) and (v - first)^2. Sorted, a chunk's values are close to its first one, so these
// sums carry the chunk's spread at full precision and combine exactly about any other centre.
struct Chunks {
  uint32_t* first;
  double* s1;
  double* s2;
};

__global__ void __launch_bounds__(kChunkThreads) chunk_sums_kernel(const uint32_t* __restrict__ keys, int64_t n,
                                                                   int64_t chunk, Chunks chunks) {
  using Reduce = cub::BlockReduce<double, kChunkThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * chunk;
  const int64_t end = begin + chunk < n ? begin + chunk : n;
  const uint32_t first = keys[begin];
  const double centre = first == kInvalidKey ? 0.0 : static_cast<double>(key_float(first));
  double s1 = 0.0, s2 = 0.0;
  for (int64_t i = begin + threadIdx.x; i < end; i += kChunkThreads) {
    const uint32_t k = keys[i];
    if (k == kInvalidKey) break;
    const double t = static_cast<double>(key_float(k)) - centre;
    s1 += t;
    s2 += t * t;
  }
  s1 = Reduce(storage).Sum(s1);
  __syncthreads();
  s2 = Reduce(storage).Sum(s2);
  if (threadIdx.x == 0) {
    chunks.first[blockIdx.x] = first;
    chunks.s1[blockIdx.x] = s1;
    chunks.s2[blockIdx.x] = s2;
  }
}

struct ClipParams {
  const uint32_t* keys;  // sorted
  int64_t n;
  int64_t chunk;  // a multiple of kMinChunk
  int nchunks;
  bool windowed;  // chunk + 2 <= kWindowKeys: the median read from the block's window of keys
  Chunks chunks;
  double kappa;
  int max_iters;
  DeviceResults* results;
};

// The clip block's warps: kPartWarps share the chunk where the kept range begins, as many the
// chunk where it ends, the rest sum the whole chunks between. Each pass's warp totals go to
// shared memory, one barrier, then every thread combines them in the same order.
constexpr int kClipWarps = kClipThreads / 32;
constexpr int kPartWarps = kClipWarps / 4;
constexpr int kLoadsPerLane = 4;                            // 16-byte loads in flight per lane
constexpr int64_t kSlabKeys = 32 * 4 * kLoadsPerLane;       // keys a warp loads at once
constexpr int64_t kWindowKeys = 2 * kMinChunk + 2;          // the median's window, per pass parity
static_assert(kMinChunk % (kPartWarps * 4) == 0, "a chunk's parts start 16-byte aligned");

struct PartSums {
  unsigned count;  // keys before the boundary
  double s1, s2;   // sums of (v - centre) and its square over the kept keys
};

// How many of first[0, m) satisfy `before` (true then false, as first is sorted), every lane the
// same answer: one look at the 32 entries around `hint` (the last pass's answer: the bounds move
// little once the clip settles), then, if the answer lies beyond them, a 32-way search.
template <typename Before>
__device__ int leading_count(const uint32_t* first, int m, int hint, Before before) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int near = max(0, min(hint - 16, m - 32));
  const int near_hits = __popc(__ballot_sync(WarpTeam::kAllLanes, near + lane < m && before(first[near + lane])));
  if (near_hits < 32 && (near_hits > 0 || near == 0)) return near + near_hits;
  int low = near_hits == 32 ? near + 32 : 0, high = near_hits == 32 ? m : near;  // the answer lies in [low, high]
  while (low < high) {
    const int stride = (high - low + 31) / 32;
    const int i = low + lane * stride;
    const int hits = __popc(__ballot_sync(WarpTeam::kAllLanes, i < high && before(first[i])));
    if (hits == 0) break;
    const int next_low = low + (hits - 1) * stride + 1;
    high = min(high, low + hits * stride);
    low = next_low;
  }
  return low;
}

// One warp's part of a boundary chunk, keys[from, to): how many keys satisfy `before` and the
// sums of (v - centre) over those `kept` selects; every lane returns the warp's totals. A slab
// wholly inside the part (the usual case) skips the per-key range checks.
template <typename Before, typename Kept>
__device__ PartSums scan_part(const uint32_t* __restrict__ keys, int64_t from, int64_t to, double centre,
                              Before before, Kept kept) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  int count = 0;
  double s1[2] = {0.0, 0.0}, s2[2] = {0.0, 0.0};  // two chains of adds, alternating by key
  const auto add = [&](uint32_t key, int chain) {
    count += before(key) ? 1 : 0;
    if (kept(key)) {
      const double t = static_cast<double>(key_float(key)) - centre;
      s1[chain] += t;
      s2[chain] = fma(t, t, s2[chain]);
    }
  };
  for (int64_t slab = from; slab < to; slab += kSlabKeys) {
    uint32_t k[kLoadsPerLane][4];
    if (to - slab >= kSlabKeys) {
#pragma unroll
      for (int r = 0; r < kLoadsPerLane; ++r) {
        const uint4 q = __ldcg(reinterpret_cast<const uint4*>(keys + slab + (r * 32 + lane) * 4));
        k[r][0] = q.x, k[r][1] = q.y, k[r][2] = q.z, k[r][3] = q.w;
      }
#pragma unroll
      for (int r = 0; r < kLoadsPerLane; ++r) {
#pragma unroll
        for (int e = 0; e < 4; ++e) add(k[r][e], e & 1);
      }
    } else {
      const int left = static_cast<int>(to - slab) - lane * 4;  // this lane's keys in r-th group: left - r * 128
#pragma unroll
      for (int r = 0; r < kLoadsPerLane; ++r) {
        for (int e = 0; e < 4; ++e) k[r][e] = e < left - r * 128 ? __ldcg(keys + slab + (r * 32 + lane) * 4 + e) : 0u;
      }
#pragma unroll
      for (int r = 0; r < kLoadsPerLane; ++r) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (e < left - r * 128) add(k[r][e], e & 1);
        }
      }
    }
  }
  return PartSums{__reduce_add_sync(WarpTeam::kAllLanes, static_cast<unsigned>(count)), WarpTeam::sum(s1[0] + s1[1]),
                  WarpTeam::sum(s2[0] + s2[1])};
}

// The kept set (lo, hi) as keys: v > lo <=> key(v) > low and v >= hi <=> key(v) >= high, with
// float comparisons' signed zeros (-0 == +0).
__device__ uint32_t low_key(double lo) {
  const float f = __double2float_rd(lo);
  return float_key(f == 0.0f ? 0.0f : f);
}
__device__ uint32_t high_key(double hi) {
  const float f = __double2float_ru(hi);
  return float_key(f == 0.0f ? -0.0f : f);
}

__global__ void __launch_bounds__(kClipThreads) clip_kernel(ClipParams p) {
  __shared__ PartSums slots[2][kClipWarps];  // by pass parity: a pass's writes never meet the last one's reads
  extern __shared__ unsigned char chunk_memory[];
  double* s1s = reinterpret_cast<double*>(chunk_memory);
  double* s2s = s1s + p.nchunks;
  uint32_t* first = reinterpret_cast<uint32_t*>(s2s + p.nchunks);
  // The keys where the median can lie, by pass parity (p.windowed: chunks of at most
  // kWindowKeys - 2 keys): loaded beside the boundary chunks, reused while the bounds' chunks stay
  // (loading them every pass: clip 55.5 -> 56.7 us per image).
  uint32_t* const windows = first + p.nchunks;
  int64_t window_start_even = -1, window_start_odd = -1;
  for (int j = threadIdx.x; j < p.nchunks; j += kClipThreads) {
    first[j] = p.chunks.first[j];
    s1s[j] = p.chunks.s1[j];
    s2s[j] = p.chunks.s2[j];
  }
  __syncthreads();
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const bool writer = threadIdx.x == 0;
  const int64_t part = p.chunk / kPartWarps;

  // The finite keys come first; they end in the last chunk that starts with one.
  const int finite_chunks = leading_count(first, p.nchunks, p.nchunks, [](uint32_t k) { return k != kInvalidKey; });
  const int64_t last_finite = finite_chunks > 0 ? finite_chunks - 1 : 0;
  if (warp < kPartWarps) {
    const int64_t from = last_finite * p.chunk + warp * part;
    const PartSums s = scan_part(
        p.keys, from, min(from + part, p.n), 0.0, [](uint32_t k) { return k != kInvalidKey; },
        [](uint32_t) { return false; });
    if (threadIdx.x % 32 == 0) slots[1][warp] = s;
  }
  __syncthreads();
  int64_t valid = 0;
  if (finite_chunks > 0) {
    valid = last_finite * p.chunk;
    for (int w = 0; w < kPartWarps; ++w) valid += slots[1][w].count;
  }
  if (writer) {
    p.results->valid = static_cast<long long>(valid);
    p.results->median = NAN;
    p.results->std = NAN;
    p.results->iterations = 0;
    p.results->kept = 0;
  }
  if (valid == 0) return;

  // Moments about the last pass's median (the first pass: the middle finite value), which lies
  // within a few std of the kept set's mean.
  double centre = static_cast<double>(key_float(__ldcg(p.keys + (valid - 1) / 2)));
  double lo = -INFINITY, hi = INFINITY;  // kept set: finite values strictly inside (lo, hi)
  uint32_t low = low_key(lo), high = high_key(hi);
  const int max_iters = p.max_iters < 1 ? 1 : p.max_iters;
  int64_t n_prev = 0;
  int before_low = 0, before_high = finite_chunks;
  for (int iter = 0; iter < max_iters; ++iter) {
    // Chunks before_low / before_high start before the range's begin / end; a boundary lies in
    // the last of them (L, H) or at the start of the next.
    before_low = leading_count(first, finite_chunks, before_low, [low](uint32_t k) { return k <= low; });
    before_high = leading_count(first, finite_chunks, before_high, [high](uint32_t k) { return k < high; });
    const int64_t L = before_low > 0 ? before_low - 1 : 0, H = before_high > 0 ? before_high - 1 : 0;
    const auto kept = [low, high](uint32_t k) { return k > low && k < high; };
    const int parity = iter & 1;
    // begin + end lies in [(L + H) chunk, (L + H + 2) chunk], so both middle keys in
    // [window_first, window_first + chunk + 2).
    const int64_t window_first = (L + H) * p.chunk / 2 > 0 ? (L + H) * p.chunk / 2 - 1 : 0;
    uint32_t* const window = windows + parity * kWindowKeys;
    const bool load_window = p.windowed && (parity ? window_start_odd : window_start_even) != window_first;
    (parity ? window_start_odd : window_start_even) = window_first;
    PartSums s{0, 0.0, 0.0};
    if (warp < kPartWarps) {  // L's keys: its kept ones, also when the range ends in L
      const int64_t from = L * p.chunk + warp * part;
      s = scan_part(p.keys, from, min(from + part, valid), centre, [low](uint32_t k) { return k <= low; }, kept);
    } else if (warp < 2 * kPartWarps) {  // H's keys: its kept ones unless L's warps took them
      const int64_t from = H * p.chunk + (warp - kPartWarps) * part;
      const bool own = H != L;
      s = scan_part(p.keys, from, min(from + part, valid), centre, [high](uint32_t k) { return k < high; },
                    [own, &kept](uint32_t k) { return own && kept(k); });
    } else {  // the median's window; whole chunks inside the range: their sums moved to centre
      const int t = static_cast<int>(threadIdx.x) - 2 * kPartWarps * 32, others = kClipThreads - 2 * kPartWarps * 32;
      if (load_window) {
        const int64_t window_end = min(window_first + p.chunk + 2, p.n);
        for (int64_t i = window_first + t; i < window_end; i += others) window[i - window_first] = __ldcg(p.keys + i);
      }
      const double count = static_cast<double>(p.chunk);
      double s1 = 0.0, s2 = 0.0;
      for (int64_t j = L + 1 + t; j < H; j += others) {
        const double d = static_cast<double>(key_float(first[j])) - centre;
        s1 += s1s[j] + count * d;
        s2 += s2s[j] + 2.0 * d * s1s[j] + count * d * d;
      }
      s = PartSums{0, WarpTeam::sum(s1), WarpTeam::sum(s2)};
    }
    if (threadIdx.x % 32 == 0) slots[parity][warp] = s;
    __syncthreads();

    // Lanes w and w + 16 read warp w's sums, then each half warp adds them up: every lane of every
    // warp gets the same bits.
    static_assert(kClipWarps == 16, "one slot per lane of a half warp");
    const int slot = static_cast<int>(threadIdx.x) % kClipWarps;
    const PartSums t = slots[parity][slot];
    const int64_t begin = L * p.chunk + WarpTeam::sum<kClipWarps>(slot < kPartWarps ? t.count : 0u);
    const int64_t end =
        H * p.chunk + WarpTeam::sum<kClipWarps>(slot >= kPartWarps && slot < 2 * kPartWarps ? t.count : 0u);
    const double s1 = WarpTeam::sum<kClipWarps>(t.s1), s2 = WarpTeam::sum<kClipWarps>(t.s2);
    const int64_t n = end - begin;
    if (n <= 0 || n == n_prev) break;  // everything clipped (or nothing finite) / nothing clipped

    const int64_t lower_middle = begin + (n - 1) / 2, upper_middle = begin + n / 2;
    const uint32_t middle_low = p.windowed ? window[lower_middle - window_first] : __ldcg(p.keys + lower_middle);
    const uint32_t middle_high = p.windowed ? window[upper_middle - window_first] : __ldcg(p.keys + upper_middle);
    const double median = n % 2 == 1 ? static_cast<double>(key_float(middle_low))
                                     : (static_cast<double>(key_float(middle_low)) +
                                        static_cast<double>(key_float(middle_high))) / 2.0;
    const double inverse_count = 1.0 / static_cast<double>(n);
    const double mean_offset = s1 * inverse_count;
    double variance = s2 * inverse_count - mean_offset * mean_offset;
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
    low = low_key(lo);
    high = high_key(hi);
    centre = median;
    n_prev = n;
  }
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
  // Chunks: a multiple of kMinChunk keys, at most kMaxChunks of them.
  const int64_t per_chunk = (n + kMaxChunks - 1) / kMaxChunks;
  const int64_t chunk = (per_chunk + kMinChunk - 1) / kMinChunk * kMinChunk;
  const int nchunks = static_cast<int>(n > 0 ? (n + chunk - 1) / chunk : 0);

  // background_work: [keys A | keys B | chunk sums s1 | s2 | first keys]; CUB's temporary
  // storage in gpu.scratch.
  const size_t key_bytes = align_up(static_cast<size_t>(n > 0 ? n : 1) * sizeof(uint32_t));
  const size_t sum_bytes = align_up(static_cast<size_t>(nchunks > 0 ? nchunks : 1) * sizeof(double));
  gpu.background_work.reserve(2 * key_bytes + 3 * sum_bytes);
  unsigned char* base = gpu.background_work.data();
  cub::DoubleBuffer<uint32_t> keys(reinterpret_cast<uint32_t*>(base), reinterpret_cast<uint32_t*>(base + key_bytes));
  Chunks chunks{reinterpret_cast<uint32_t*>(base + 2 * key_bytes + 2 * sum_bytes),
                reinterpret_cast<double*>(base + 2 * key_bytes), reinterpret_cast<double*>(base + 2 * key_bytes + sum_bytes)};

  if (n > 0) {
    keys_kernel<<<detail::blocks_for(n, kKeyThreads, static_cast<int64_t>(gpu.sm_count) * 8), kKeyThreads, 0,
                  gpu.stream>>>(source, n, keys.Current());
    IMFLOW_CUDA_CHECK_LAUNCH();
    size_t temp_bytes = 0;
    IMFLOW_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, keys, n, 0, 32, gpu.stream));
    gpu.scratch.reserve(temp_bytes);
    IMFLOW_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(gpu.scratch.data(), temp_bytes, keys, n, 0, 32, gpu.stream));
    chunk_sums_kernel<<<nchunks, kChunkThreads, 0, gpu.stream>>>(keys.Current(), n, chunk, chunks);
    IMFLOW_CUDA_CHECK_LAUNCH();
  }

  ClipParams p{};
  p.keys = keys.Current();
  p.n = n;
  p.chunk = chunk > 0 ? chunk : 1;
  p.nchunks = nchunks;
  p.windowed = p.chunk + 2 <= kWindowKeys;
  p.chunks = chunks;
  p.kappa = kappa;
  p.max_iters = max_iters;
  p.results = results;
  constexpr size_t kChunkBytes = 2 * sizeof(double) + sizeof(uint32_t);
  constexpr size_t kWindowBytes = 2 * kWindowKeys * sizeof(uint32_t);
  const size_t shared = static_cast<size_t>(nchunks) * kChunkBytes + (p.windowed ? kWindowBytes : 0);
  // Every launch asks for the most any image needs, so concurrent launches never race on the limit.
  IMFLOW_CUDA_CHECK(cudaFuncSetAttribute(clip_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(kMaxChunks * kChunkBytes + kWindowBytes)));
  clip_kernel<<<1, kClipThreads, shared, gpu.stream>>>(p);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
