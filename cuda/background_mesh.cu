// The SEP mesh background on the device: one block per mesh computes SEP's clipped statistics,
// histogram and mode (the sequential two-pointer median of backguess found with a block scan);
// small kernels fill, filter and spline the grid; one thread per pixel evaluates the maps.
// Compiled with --fmad=false (cuda/CMakeLists.txt) so float expressions round as on the CPU.
#include <cub/cub.cuh>

#include <cmath>
#include <memory>

#include "cuda/background_mesh.hpp"
#include "imflow/kernels/mesh_fill.hpp"
#include "cuda/device_common.cuh"

namespace imflow::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kBins = 4096;  // QUANTIF_NMAXLEVELS
constexpr int kBinsPerThread = kBins / kThreads;
constexpr int kWarps = kThreads / 32;
constexpr double kBig = 1e30;
constexpr double kPi = 3.1415926535898;  // SEP's PI
constexpr int kMaxWindow = static_cast<int>(kernels::kMaxMeshFilterSize * kernels::kMaxMeshFilterSize);

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

// Natural cubic-spline second derivatives (kernels::spline_second_derivatives).
__device__ void spline_second(const float* values, int64_t count, int64_t stride, float* second, float* u) {
  if (count < 2) {
    if (count == 1) second[0] = 0.0f;
    return;
  }
  second[0] = u[0] = 0.0f;
  for (int64_t k = 1; k < count - 1; ++k) {
    float temp = -1 / (second[(k - 1) * stride] + 4);
    second[k * stride] = temp;
    temp *= u[k - 1] - 6 * (values[(k + 1) * stride] + values[(k - 1) * stride] - 2 * values[k * stride]);
    u[k] = temp;
  }
  second[(count - 1) * stride] = 0.0f;
  for (int64_t k = count - 2; k >= 1; --k) {
    second[k * stride] = static_cast<float>((second[k * stride] * second[(k + 1) * stride] + u[k]) / 6.0);
  }
}

// y second derivatives of both maps: one thread per (map, mesh column).
__global__ void spline_y_kernel(const float* back, const float* sigma, int64_t nx, int64_t ny, float* second,
                                float* work) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= 2 * nx) return;
  const int64_t map = t / nx, x = t - map * nx;
  const float* values = map == 0 ? back : sigma;
  spline_second(values + x, ny, nx, second + map * nx * ny + x, work + t * ny);
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
  spline_second(node, nx, 1, dnode, work + t * nx);
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

void background_mesh(GpuContext& gpu, const kernels::MeshParams& params) {
  DeviceGuard guard(gpu.device);
  if (!gpu.mesh_background) gpu.mesh_background = std::make_shared<MeshBackgroundState>();
  MeshBackgroundState& st = *gpu.mesh_background;
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

  gpu.has_background = true;
  gpu.has_background_maps = true;
  DeviceResults* results = gpu.results.data();
  if (n == 0) {  // as the CPU: NaN statistics, empty maps
    const double nan = std::nan("");
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(&results->median, &nan, sizeof(double), cudaMemcpyHostToDevice, gpu.stream));
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(&results->std, &nan, sizeof(double), cudaMemcpyHostToDevice, gpu.stream));
    return;
  }
  const float* source = gpu.has_detection ? gpu.detection.data() : gpu.image.data();
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(&results->valid, 0, sizeof(long long), gpu.stream));
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(&results->meshes_dropped, 0, sizeof(long long), gpu.stream));

  const MeshGeometry geometry{source, width, height, params.mesh_width, params.mesh_height, nx};
  mesh_stats_kernel<<<static_cast<unsigned>(np), kThreads, 0, gpu.stream>>>(geometry, st.raw_back.data(),
                                                                             st.raw_sigma.data(), results);
  IMFLOW_CUDA_CHECK_LAUNCH();
  const int grid_blocks = detail::blocks_for(np, 128);
  fill_kernel<<<grid_blocks, 128, 0, gpu.stream>>>(st.raw_back.data(), st.raw_sigma.data(), nx, ny,
                                                   st.filled_back.data(), st.filled_sigma.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  filter_kernel<<<grid_blocks, 128, 0, gpu.stream>>>(st.filled_back.data(), st.filled_sigma.data(), nx, ny,
                                                     params.filter_width / 2, params.filter_height / 2,
                                                     params.filter_threshold, st.back.data(), st.sigma.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
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
