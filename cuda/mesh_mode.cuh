// Block-wide pieces of SEP's per-mesh statistics on the device, shared by the image's meshes
// (cuda/mesh_stats.cu) and a weight map's (cuda/weight_noise.cu): double sums over a block and
// backguess, the clipped mode of one mesh's histogram (twin of kernels::histogram_mode).
// Include only from files compiled with --fmad=false.
#pragma once
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <climits>
#include <cmath>

namespace imflow::cuda::mesh {

constexpr int kThreads = 256;
constexpr int kBins = 4096;  // QUANTIF_NMAXLEVELS
constexpr int kBinsPerThread = kBins / kThreads;
constexpr int kWarps = kThreads / 32;
constexpr double kBig = 1e30;
constexpr double kPi = 3.1415926535898;  // SEP's PI

// The pixels of mesh number `mesh` (row-major over nx meshes a row) of a width-wide image:
// count of them, the k-th one's index in the image.
struct MeshRect {
  int64_t x0, y0, w, h, width;
  __device__ MeshRect(int64_t mesh, int64_t nx, int64_t width, int64_t height, int64_t mesh_width, int64_t mesh_height)
      : x0(mesh % nx * mesh_width), y0(mesh / nx * mesh_height), w(min(mesh_width, width - x0)),
        h(min(mesh_height, height - y0)), width(width) {}
  __device__ int64_t count() const { return w * h; }
  __device__ int64_t index(int64_t k) const {
    const int64_t yy = k / w;
    return (y0 + yy) * width + x0 + (k - yy * w);
  }
};

// Sums of (a, b) and a count.
struct Moments {
  double a, b;
  long long n;
};

struct Smaller {
  __device__ long long operator()(long long a, long long b) const { return b < a ? b : a; }
};

using BlockScan = cub::BlockScan<long long, kThreads>;
using BlockReduceMin = cub::BlockReduce<long long, kThreads>;

// The shared memory of block_sum and histogram_mode.
struct BlockStorage {
  Moments warp_parts[kWarps];
  Moments total;
  union {
    typename BlockScan::TempStorage scan;
    typename BlockReduceMin::TempStorage reduce;
  } cub;
  long long split, below_split;
};

// Block-wide sums of (a, b, n), the same value returned to every thread.
__device__ inline Moments block_sum(Moments m, BlockStorage& s) {
  for (int offset = 16; offset > 0; offset /= 2) {
    m.a += __shfl_down_sync(0xFFFFFFFFu, m.a, offset);
    m.b += __shfl_down_sync(0xFFFFFFFFu, m.b, offset);
    m.n += __shfl_down_sync(0xFFFFFFFFu, m.n, offset);
  }
  if ((threadIdx.x & 31) == 0) s.warp_parts[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    Moments t{0.0, 0.0, 0};
    for (int w = 0; w < kWarps; ++w) {
      t.a += s.warp_parts[w].a;
      t.b += s.warp_parts[w].b;
      t.n += s.warp_parts[w].n;
    }
    s.total = t;
  }
  __syncthreads();
  const Moments result = s.total;
  __syncthreads();
  return result;
}

// A histogram's scale as SEP's backstat sets it from the clipped sums (mean, sigma, n).
struct Quantisation {
  long long nlevels;
  float qscale, qzero, cste;
  __device__ Quantisation(double mean, double sd, long long n) {
    const double step = sqrt(2.0 / kPi) * 5 / 4;
    nlevels = static_cast<int>(step * static_cast<double>(n) + 1);
    if (nlevels > kBins) nlevels = kBins;
    qscale = sd > 0.0 ? static_cast<float>(2 * 5 * sd / static_cast<double>(nlevels)) : 1.0f;
    qzero = static_cast<float>(mean - 5 * sd);
    cste = static_cast<float>(0.499999 - static_cast<double>(qzero / qscale));
  }
  // The bin of v, or -1 outside [0, nlevels) (SExtractor's (int)(v / qscale + cste)).
  __device__ int bin(float v) const {
    const float f = v / qscale + cste;
    return f > -1.0f && f < static_cast<float>(nlevels) ? static_cast<int>(f) : -1;
  }
};

struct MeshMode {
  float back, sigma;
};

// backguess over histo[0, nlevels) (shared memory, counts of the mesh's quantised values):
// clipped at median +- 3 sigma until sigma converges (at most 100 rounds); mode 2.5 median - 1.5
// mean where |mean - median| / sigma < 0.3, else the median; mean_f when the loop never runs.
// The sequential walk from both ends of [lcut, hcut] (the lower end advances while its sum is
// below the upper's) stops at the first bin s with sum(h[s+1..hcut]) <= sum(h[lcut..s-1]): found
// with a scan. Sums of counts and of counts x bin are integers, exact in any order, so the loop
// takes the CPU's decisions exactly. Every thread of the block calls it; thread 0's result counts.
__device__ inline MeshMode histogram_mode(const int* histo, long long nlevels, float mean_f, float qzero, float qscale,
                                          BlockStorage& storage) {
  const long long top = nlevels - 1;
  long long lcut = 0, hcut = top;
  double sig = 10.0 * static_cast<double>(top), sig1 = 1.0, mea = mean_f, med = mean_f;
  for (int n = 100; n-- && sig >= 0.1 && fabs(sig / sig1 - 1.0) > 1e-4;) {
    sig1 = sig;
    long long counts[kBinsPerThread];
    long long chunk = 0, moment1 = 0, moment2 = 0;
    const int first_bin = threadIdx.x * kBinsPerThread;
    for (int j = 0; j < kBinsPerThread; ++j) {
      const long long bin = first_bin + j;
      counts[j] = (bin >= lcut && bin <= hcut) ? histo[bin] : 0;
      chunk += counts[j];
      moment1 += counts[j] * bin;
      moment2 += counts[j] * bin * bin;
    }
    long long before = 0, sum = 0;
    BlockScan(storage.cub.scan).ExclusiveSum(chunk, before, sum);
    __syncthreads();
    // First bin (in the window) with T - C(b) <= C(b) - h[b], C inclusive from lcut.
    long long candidate = LLONG_MAX, running = before;
    for (int j = 0; j < kBinsPerThread; ++j) {
      const long long bin = first_bin + j;
      running += counts[j];
      if (bin >= lcut && bin <= hcut && candidate == LLONG_MAX && sum - running <= running - counts[j]) candidate = bin;
    }
    const long long split = BlockReduceMin(storage.cub.reduce).Reduce(candidate, Smaller());
    if (threadIdx.x == 0) storage.split = split;
    __syncthreads();
    const long long lo_bin = storage.split;
    // The owner of bin `split` publishes C(split - 1) (the lower sum).
    if (lo_bin != LLONG_MAX && lo_bin >= first_bin && lo_bin < first_bin + kBinsPerThread) {
      long long below = before;
      for (int j = 0; j < lo_bin - first_bin; ++j) below += counts[j];
      storage.below_split = below;
    }
    const Moments moments = block_sum(Moments{static_cast<double>(moment1), static_cast<double>(moment2), 0}, storage);
    long long lo, hi, lowsum, highsum;
    if (lo_bin == LLONG_MAX) {  // empty window: the walk never ran
      lo = lcut;
      hi = hcut;
      lowsum = highsum = 0;
    } else {
      lo = lo_bin;
      hi = lo_bin - 1;
      lowsum = storage.below_split;
      highsum = sum - lowsum;
    }
    const double median =
        hi >= 0 ? (static_cast<double>(hi) + 0.5 +
                   (static_cast<double>(highsum) - static_cast<double>(lowsum)) /
                       (2.0 * static_cast<double>(max(histo[min(lo, top)], histo[min(hi, top)]))))
                : 0.0;
    // moments.a/b are exact integers (< 2^53), as the CPU's sums.
    double mean = moments.a, var = moments.b;
    if (sum != 0) {
      mean /= static_cast<double>(sum);
      var = var / static_cast<double>(sum) - mean * mean;
    }
    var = var > 0.0 ? sqrt(var) : 0.0;
    double cut = median - 3.0 * var;
    lcut = cut > 0.0 ? static_cast<long long>(cut + 0.5) : 0;
    cut = median + 3.0 * var;
    hcut = cut < static_cast<double>(top) ? static_cast<long long>(cut > 0.0 ? cut + 0.5 : cut - 0.5) : top;
    mea = mean;
    med = median;
    sig = var;
    __syncthreads();
  }
  const double mode = fabs(sig) > 0.0 ? (fabs((mea - med) / sig) < 0.3 ? qzero + (2.5 * med - 1.5 * mea) * qscale
                                                                          : qzero + med * qscale)
                                      : qzero + mea * qscale;
  return {static_cast<float>(mode), static_cast<float>(sig * qscale)};
}

}  // namespace imflow::cuda::mesh
