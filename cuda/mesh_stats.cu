// SEP's per-mesh background statistics on the device (cuda/mesh_stats.hpp): one block per mesh
// computes the clipped mean and sigma, the histogram and the mode (the sequential two-pointer
// median of SEP's backguess found with a block scan). Compiled with --fmad=false
// (cuda/CMakeLists.txt) so float expressions round as on the CPU.
#include <cub/cub.cuh>

#include <climits>
#include <cmath>

#include "cuda/mesh_stats.hpp"

namespace imflow::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kBins = 4096;  // QUANTIF_NMAXLEVELS
constexpr int kBinsPerThread = kBins / kThreads;
constexpr int kWarps = kThreads / 32;
constexpr double kBig = 1e30;
constexpr double kPi = 3.1415926535898;  // SEP's PI

__device__ __forceinline__ bool usable(float v) { return isfinite(v) && v > -kBig; }

// Block-wide sums of (a, b, n), the same value returned to every thread.
struct Moments {
  double a, b;
  long long n;
};

__device__ Moments block_sum(Moments m, Moments* warp_parts, Moments* total) {
  for (int offset = 16; offset > 0; offset /= 2) {
    m.a += __shfl_down_sync(0xFFFFFFFFu, m.a, offset);
    m.b += __shfl_down_sync(0xFFFFFFFFu, m.b, offset);
    m.n += __shfl_down_sync(0xFFFFFFFFu, m.n, offset);
  }
  if ((threadIdx.x & 31) == 0) warp_parts[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    Moments t{0.0, 0.0, 0};
    for (int w = 0; w < kWarps; ++w) {
      t.a += warp_parts[w].a;
      t.b += warp_parts[w].b;
      t.n += warp_parts[w].n;
    }
    *total = t;
  }
  __syncthreads();
  const Moments result = *total;
  __syncthreads();
  return result;
}

struct MeshGeometry {
  const float* image;
  int64_t width, height, mesh_width, mesh_height, nx;
};

// backguess's loop state, shared by the block.
struct Guess {
  long long lcut, hcut;
  double sig, sig1, mea, med;
};

struct Smaller {
  __device__ long long operator()(long long a, long long b) const { return b < a ? b : a; }
};

using BlockScan = cub::BlockScan<long long, kThreads>;
using BlockReduceMin = cub::BlockReduce<long long, kThreads>;

// One block per mesh: kernels::estimate_mesh.
__global__ void __launch_bounds__(kThreads)
    mesh_stats_kernel(MeshGeometry g, float* back, float* sigma, DeviceResults* results) {
  __shared__ int histo[kBins];
  __shared__ Moments warp_parts[kWarps];
  __shared__ Moments total;
  __shared__ union {
    typename BlockScan::TempStorage scan;
    typename BlockReduceMin::TempStorage reduce;
  } storage;
  __shared__ long long split_shared, below_split_shared;

  const int64_t mesh = blockIdx.x;
  const int64_t my = mesh / g.nx, mx = mesh - my * g.nx;
  const int64_t x0 = mx * g.mesh_width, y0 = my * g.mesh_height;
  const int64_t w = min(g.mesh_width, g.width - x0), h = min(g.mesh_height, g.height - y0);
  const int64_t count = w * h;
  auto pixel = [&](int64_t k) {
    const int64_t yy = k / w;
    return g.image[(y0 + yy) * g.width + x0 + (k - yy * w)];
  };

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
  const Moments first = block_sum(m, warp_parts, &total);
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
  const Moments second = block_sum(m, warp_parts, &total);
  mean = second.a / static_cast<double>(second.n);
  var = second.b / static_cast<double>(second.n) - mean * mean;
  sd = var > 0.0 ? sqrt(var) : 0.0;
  const double step = sqrt(2.0 / kPi) * 5 / 4;
  long long nlevels = static_cast<int>(step * static_cast<double>(second.n) + 1);
  if (nlevels > kBins) nlevels = kBins;
  const float qscale = sd > 0.0 ? static_cast<float>(2 * 5 * sd / static_cast<double>(nlevels)) : 1.0f;
  const float qzero = static_cast<float>(mean - 5 * sd);
  const float mean_f = static_cast<float>(mean);

  // backhisto.
  for (int b = threadIdx.x; b < kBins; b += kThreads) histo[b] = 0;
  __syncthreads();
  const float cste = static_cast<float>(0.499999 - static_cast<double>(qzero / qscale));
  const float levels = static_cast<float>(nlevels);
  for (int64_t k = threadIdx.x; k < count; k += kThreads) {
    const float f = pixel(k) / qscale + cste;
    if (f > -1.0f && f < levels) atomicAdd(&histo[static_cast<int>(f)], 1);
  }
  __syncthreads();

  // backguess. The sequential walk from both ends of [lcut, hcut] (the lower end advances
  // while its sum is below the upper's) stops at the first bin s with sum(h[s+1..hcut]) <=
  // sum(h[lcut..s-1]): found with a scan. Sums of counts and of counts x bin are integers,
  // exact in any order, so the loop takes the CPU's decisions exactly.
  const long long top = nlevels - 1;
  Guess s{0, top, 10.0 * static_cast<double>(top), 1.0, mean_f, mean_f};
  for (int n = 100; n-- && s.sig >= 0.1 && fabs(s.sig / s.sig1 - 1.0) > 1e-4;) {
    s.sig1 = s.sig;
    long long counts[kBinsPerThread];
    long long chunk = 0, moment1 = 0, moment2 = 0;
    const int first_bin = threadIdx.x * kBinsPerThread;
    for (int j = 0; j < kBinsPerThread; ++j) {
      const long long bin = first_bin + j;
      counts[j] = (bin >= s.lcut && bin <= s.hcut) ? histo[bin] : 0;
      chunk += counts[j];
      moment1 += counts[j] * bin;
      moment2 += counts[j] * bin * bin;
    }
    long long before = 0, sum = 0;
    BlockScan(storage.scan).ExclusiveSum(chunk, before, sum);
    __syncthreads();
    // First bin (in the window) with T - C(b) <= C(b) - h[b], C inclusive from lcut.
    long long candidate = LLONG_MAX, running = before;
    for (int j = 0; j < kBinsPerThread; ++j) {
      const long long bin = first_bin + j;
      running += counts[j];
      if (bin >= s.lcut && bin <= s.hcut && candidate == LLONG_MAX && sum - running <= running - counts[j])
        candidate = bin;
    }
    const long long split = BlockReduceMin(storage.reduce).Reduce(candidate, Smaller());
    if (threadIdx.x == 0) split_shared = split;
    __syncthreads();
    const long long lo_bin = split_shared;
    // The owner of bin `split` publishes C(split - 1) (the lower sum).
    if (lo_bin != LLONG_MAX && lo_bin >= first_bin && lo_bin < first_bin + kBinsPerThread) {
      long long below = before;
      for (int j = 0; j < lo_bin - first_bin; ++j) below += counts[j];
      below_split_shared = below;
    }
    const Moments moments = block_sum(Moments{static_cast<double>(moment1), static_cast<double>(moment2), 0},
                                      warp_parts, &total);
    long long lo, hi, lowsum, highsum;
    if (lo_bin == LLONG_MAX) {  // empty window: the walk never ran
      lo = s.lcut;
      hi = s.hcut;
      lowsum = highsum = 0;
    } else {
      lo = lo_bin;
      hi = lo_bin - 1;
      lowsum = below_split_shared;
      highsum = sum - lowsum;
    }
    double mea = 0.0, sig = 0.0;
    const double med =
        hi >= 0 ? (static_cast<double>(hi) + 0.5 +
                   (static_cast<double>(highsum) - static_cast<double>(lowsum)) /
                       (2.0 * static_cast<double>(max(histo[min(lo, top)], histo[min(hi, top)]))))
                : 0.0;
    // moments.a/b are exact integers (< 2^53), as the CPU's sums.
    mea = moments.a;
    sig = moments.b;
    if (sum != 0) {
      mea /= static_cast<double>(sum);
      sig = sig / static_cast<double>(sum) - mea * mea;
    }
    sig = sig > 0.0 ? sqrt(sig) : 0.0;
    double cut = med - 3.0 * sig;
    s.lcut = cut > 0.0 ? static_cast<long long>(cut + 0.5) : 0;
    cut = med + 3.0 * sig;
    s.hcut = cut < static_cast<double>(top) ? static_cast<long long>(cut > 0.0 ? cut + 0.5 : cut - 0.5) : top;
    s.mea = mea;
    s.med = med;
    s.sig = sig;
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const double mode = fabs(s.sig) > 0.0
                            ? (fabs((s.mea - s.med) / s.sig) < 0.3 ? qzero + (2.5 * s.med - 1.5 * s.mea) * qscale
                                                                   : qzero + s.med * qscale)
                            : qzero + s.mea * qscale;
    back[mesh] = static_cast<float>(mode);
    sigma[mesh] = static_cast<float>(s.sig * qscale);
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
