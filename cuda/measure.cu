// Measurement kernels: each thread walks a short run of pixels and accumulates while the label
// stays the same (segments are runs along rows), then flushes with float64/64-bit atomics.
#include <climits>
#include <stdexcept>

#include "cuda/background_mesh.hpp"
#include "cuda/catalog_text.hpp"
#include "cuda/deblend_objects.hpp"
#include "cuda/device_common.cuh"
#include "cuda/measure.hpp"
#include "cuda/measured_image.hpp"
#include "imflow/kernels/dual_image.hpp"
#include "imflow/kernels/pixel_moments.hpp"
#include "imflow/kernels/source_shape.hpp"

namespace imflow::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kRun = 8;  // pixels per thread

// Per-label arrays of kernels::PixelMoments' six sums.
struct MomentArrays {
  double *s, *sx, *sy, *sxx, *syy, *sxy;

  __device__ void reset(int64_t r) const { s[r] = sx[r] = sy[r] = sxx[r] = syy[r] = sxy[r] = 0.0; }
  __device__ kernels::PixelMoments at(int64_t r) const { return {s[r], sx[r], sy[r], sxx[r], syy[r], sxy[r]}; }
  __device__ void flush(int64_t r, const kernels::PixelMoments& m) const {
    atomicAdd(s + r, m.s);
    atomicAdd(sx + r, m.sx);
    atomicAdd(sy + r, m.sy);
    atomicAdd(sxx + r, m.sxx);
    atomicAdd(syy + r, m.syy);
    atomicAdd(sxy + r, m.sxy);
  }
};

struct Accumulators {
  unsigned long long* npix;
  double* flux;
  double* sum_x;
  double* sum_y;
  unsigned long long* peak;
  unsigned long long* peak_index;
  unsigned int* xmin;
  unsigned int* xmax;
  unsigned int* ymin;
  unsigned int* ymax;
  MomentArrays weights;    // moments of w = value - background about the source's first pixel
  MomentArrays variances;  // the same of the pixel variances (kernels::pixel_variance)
  int* flags;
  unsigned long long* first;  // raster index of the label's first pixel (first_pixel_kernel)
  int64_t capacity;
};

// What measure subtracts (kernels::MeasureBackground): the mesh map from every value, or the
// global median (results->median) for flux_iso and the moments only; and the noise of the error
// columns: the mesh RMS map, or the global std (results->std), or none (NaN errors).
struct Background {
  const float* map;     // null: none
  bool level;           // subtract stats->median for w
  const float* rms_map; // null: the global std (stats->std) when `level`, else no noise estimate
  double gain;          // e-/ADU, 0: no Poisson term
  const DeviceResults* stats;
  bool weight_gain;     // the weight map's WEIGHT_GAIN: the Poisson term x rms^2 / stats->std^2
};

Accumulators accumulators_of(CatalogAccumulators& a, int64_t capacity) {
  const MomentArrays weights{a.flux_iso.data(), a.sum_wx.data(),  a.sum_wy.data(),
                             a.sum_wxx.data(),  a.sum_wyy.data(), a.sum_wxy.data()};
  const MomentArrays variances{a.sum_v.data(),   a.sum_vx.data(),  a.sum_vy.data(),
                               a.sum_vxx.data(), a.sum_vyy.data(), a.sum_vxy.data()};
  return {a.npix.data(), a.flux.data(), a.sum_x.data(), a.sum_y.data(), a.peak.data(), a.peak_index.data(),
          a.xmin.data(), a.xmax.data(), a.ymin.data(),  a.ymax.data(),  weights,       variances,
          a.flags.data(), a.first.data(), capacity};
}

Accumulators accumulators_of(GpuContext& gpu) { return accumulators_of(gpu.accumulators, gpu.catalog_capacity); }

__device__ __forceinline__ int64_t valid_rows(const DeviceResults* results, int64_t capacity) {
  const int64_t n = results->nlabels;
  return n < capacity ? n : capacity;
}

__global__ void reset_kernel(Accumulators a, const DeviceResults* results) {
  const int64_t rows = valid_rows(results, a.capacity);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * kThreads) {
    a.npix[r] = 0;
    a.flux[r] = 0.0;
    a.sum_x[r] = 0.0;
    a.sum_y[r] = 0.0;
    a.peak[r] = 0;
    a.peak_index[r] = ULLONG_MAX;
    a.xmin[r] = UINT_MAX;
    a.ymin[r] = UINT_MAX;
    a.xmax[r] = 0;
    a.ymax[r] = 0;
    a.weights.reset(r);
    a.variances.reset(r);
    a.flags[r] = 0;
    a.first[r] = ULLONG_MAX;
  }
}

// The first pixel of every label in raster order (the smallest index: each row segment's start
// competes), the origin of its moments, as the CPU's (kernels::accumulate_sources) is.
__global__ void first_pixel_kernel(const int32_t* __restrict__ labels, int64_t width, int64_t n, Accumulators a) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int32_t l = labels[i];
    if (l <= 0 || l > a.capacity) continue;
    if (i % width != 0 && labels[i - 1] == l) continue;  // not the start of a row segment
    atomicMin(a.first + l - 1, static_cast<unsigned long long>(i));
  }
}

// Non-finite values never win the peak (they rank below every finite value).
__device__ __forceinline__ uint32_t peak_key(float v) { return isfinite(v) ? detail::float_key(v) : 0u; }

struct Run {
  int32_t label = 0;
  unsigned long long npix = 0;
  double flux = 0.0, sx = 0.0, sy = 0.0;
  unsigned long long peak = 0;
  unsigned int xmin = UINT_MAX, xmax = 0, ymin = UINT_MAX, ymax = 0;
  kernels::PixelMoments w, v;  // of the weights and of the variances
  int flags = 0;
};

// Wide = true: images of 2^32 pixels or more; `peak` holds the value key only, the position is
// found by position_kernel.
template <bool Wide>
__device__ void flush(const Run& r, const Accumulators& a, DeviceResults* results) {
  if (r.label <= 0) return;
  const int64_t row = r.label - 1;
  if (row >= a.capacity) {
    results->catalog_overflow = 1;
    return;
  }
  atomicAdd(a.npix + row, r.npix);
  atomicAdd(a.flux + row, r.flux);
  atomicAdd(a.sum_x + row, r.sx);
  atomicAdd(a.sum_y + row, r.sy);
  atomicMax(a.peak + row, r.peak);
  atomicMin(a.xmin + row, r.xmin);
  atomicMax(a.xmax + row, r.xmax);
  atomicMin(a.ymin + row, r.ymin);
  atomicMax(a.ymax + row, r.ymax);
  a.weights.flush(row, r.w);
  a.variances.flush(row, r.v);
  if (r.flags != 0) atomicOr(a.flags + row, r.flags);
}

// Whether one of the 8 neighbours of (x, y) is not finite (kFlagMaskedNeighbour).
__device__ bool masked_neighbour(const float* __restrict__ image, int64_t width, int64_t height, int64_t x, int64_t y) {
  for (int64_t ny = y - 1; ny <= y + 1; ++ny) {
    if (ny < 0 || ny >= height) continue;
    for (int64_t nx = x - 1; nx <= x + 1; ++nx) {
      if (nx >= 0 && nx < width && !isfinite(__ldg(image + ny * width + nx))) return true;
    }
  }
  return false;
}

// At most 64 registers (4 blocks of 256 per SM, a few spilled): 87 left a quarter of the warps
// resident and the kernel latency-bound (0.74x its time on an H200).
template <bool Wide>
__global__ void __launch_bounds__(kThreads, 4)
    accumulate_kernel(const float* __restrict__ image, const int32_t* __restrict__ labels, int64_t width, int64_t n,
                      Accumulators a, Background background, DeviceResults* results) {
  const int64_t runs = (n + kRun - 1) / kRun;
  const int64_t height = n / width;
  // Moments about the source's first pixel, as on the CPU (about the image centre, sums of a
  // large image's sources lost ~8 digits to cancellation).
  int64_t cx = 0, cy = 0;
  const double level = background.level ? background.stats->median : 0.0;
  const double global_rms = background.level ? background.stats->std : NAN;
  const double backnoise2 = background.weight_gain ? background.stats->std * background.stats->std : 0.0;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < runs;
       t += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t begin = t * kRun;
    const int64_t end = begin + kRun < n ? begin + kRun : n;
    int64_t y = begin / width;
    int64_t x = begin - y * width;
    Run r;
    for (int64_t i = begin; i < end; ++i) {
      const int32_t l = labels[i];
      if (l != r.label) {
        flush<Wide>(r, a, results);
        r = Run{};
        r.label = l;
        if (l > 0 && l <= a.capacity) {
          const auto origin = static_cast<int64_t>(a.first[l - 1]);
          cy = origin / width;
          cx = origin - cy * width;
        }
      }
      if (l > 0) {
        // SEP measures data - bkg in float32: so does the CPU.
        const float v = background.map != nullptr ? image[i] - background.map[i] : image[i];
        const double d = v;
        const double w = d - level, dx = static_cast<double>(x - cx), dy = static_cast<double>(y - cy);
        r.w.add(w, dx, dy);
        const double rms = background.rms_map != nullptr ? static_cast<double>(background.rms_map[i]) : global_rms;
        r.v.add(kernels::pixel_variance(rms, w, background.gain, backnoise2), dx, dy);
        if (masked_neighbour(image, width, height, x, y)) r.flags |= kFlagMaskedNeighbour;
        r.npix += 1;
        r.flux += d;
        r.sx += d * static_cast<double>(x);
        r.sy += d * static_cast<double>(y);
        const unsigned long long key =
            Wide ? peak_key(v)
                 : (static_cast<unsigned long long>(peak_key(v)) << 32) | (0xFFFFFFFFull - static_cast<uint64_t>(i));
        r.peak = key > r.peak ? key : r.peak;
        const auto ux = static_cast<unsigned int>(x), uy = static_cast<unsigned int>(y);
        r.xmin = ux < r.xmin ? ux : r.xmin;
        r.xmax = ux > r.xmax ? ux : r.xmax;
        r.ymin = uy < r.ymin ? uy : r.ymin;
        r.ymax = uy > r.ymax ? uy : r.ymax;
      }
      if (++x == width) {
        x = 0;
        ++y;
      }
    }
    flush<Wide>(r, a, results);
  }
}

// Wide images only: the smallest index holding each label's maximum value.
__global__ void __launch_bounds__(kThreads)
    position_kernel(const float* __restrict__ image, const int32_t* __restrict__ labels, int64_t n, Accumulators a,
                    Background background) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int32_t l = labels[i];
    if (l <= 0 || l > a.capacity) continue;
    const float v = background.map != nullptr ? image[i] - background.map[i] : image[i];
    if (peak_key(v) == a.peak[l - 1]) atomicMin(a.peak_index + l - 1, static_cast<unsigned long long>(i));
  }
}

// One catalog row from the accumulators. records (null: none): deblend's objects; a blend's
// child gets SEP's centre, its moments about it, kFlagDeblended, and the edge flag of its branch,
// an object SExtractor's CLEAN merged others into its own centre (kernels::measure_deblended's rows).
__device__ DeviceSource catalog_row(const Accumulators& a, int64_t r, int64_t width, int64_t height, bool wide,
                                    const DeblendRecord* records) {
  DeviceSource s;
  s.id = static_cast<int32_t>(r + 1);
  s.flags = a.flags[r];
  s.flux = a.flux[r];
  s.x = a.sum_x[r] / s.flux;
  s.y = a.sum_y[r] / s.flux;
  s.npix = static_cast<int64_t>(a.npix[r]);
  const unsigned long long peak = a.peak[r];
  const uint32_t value_key = wide ? static_cast<uint32_t>(peak) : static_cast<uint32_t>(peak >> 32);
  const int64_t index = wide ? static_cast<int64_t>(a.peak_index[r])
                             : static_cast<int64_t>(0xFFFFFFFFull - (peak & 0xFFFFFFFFull));
  s.peak = value_key == 0 ? NAN : static_cast<double>(detail::key_float(value_key));
  s.peak_y = index / width;
  s.peak_x = index - s.peak_y * width;
  s.xmin = a.xmin[r];
  s.xmax = a.xmax[r];
  s.ymin = a.ymin[r];
  s.ymax = a.ymax[r];
  kernels::set_shape_columns(s, a.weights.at(r), a.variances.at(r));
  if (s.npix > 0 && (s.xmin == 0 || s.ymin == 0 || s.xmax == width - 1 || s.ymax == height - 1)) s.flags |= kFlagEdge;
  if (records != nullptr && (records[r].blended != 0 || records[r].merged != 0)) {
    const DeblendRecord& object = records[r];
    const int64_t first = static_cast<int64_t>(a.first[r]);
    const int64_t ref_y = first / width, ref_x = first - ref_y * width;
    s.x = object.x;
    s.y = object.y;
    kernels::set_shape_columns_about(s, a.weights.at(r), a.variances.at(r), object.x - static_cast<double>(ref_x),
                                     object.y - static_cast<double>(ref_y));
    s.flags = (s.flags & ~(kFlagEdge | kFlagDeblended)) | (object.blended != 0 ? kFlagDeblended : 0) |
              (object.truncated != 0 ? kFlagEdge : 0);
  }
  if (records != nullptr) s.flags = (s.flags & ~kFlagSingular) | (records[r].singular != 0 ? kFlagSingular : 0);
  return s;
}

// The valid rows into `out`, usually mapped host memory: each block builds kRowThreads rows in
// shared memory, then writes them as consecutive 8-byte words, so that a warp's stores leave as
// whole 256-byte runs over PCIe rather than 32 scattered fields of 32 rows.
constexpr int kRowThreads = 128;
static_assert(sizeof(DeviceSource) % sizeof(unsigned long long) == 0);
constexpr int kRowWords = static_cast<int>(sizeof(DeviceSource) / sizeof(unsigned long long));

__global__ void __launch_bounds__(kRowThreads) rows_kernel(Accumulators a, const DeviceResults* results, int64_t width,
                                                           int64_t height, bool wide, const DeblendRecord* records,
                                                           DeviceSource* out, DeviceSource* device_copy) {
  __shared__ unsigned long long staged[kRowThreads * kRowWords];
  const int64_t rows = valid_rows(results, a.capacity);
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kRowThreads; first < rows;
       first += static_cast<int64_t>(gridDim.x) * kRowThreads) {
    const int64_t count = rows - first < kRowThreads ? rows - first : kRowThreads;
    if (threadIdx.x < count) {
      reinterpret_cast<DeviceSource*>(staged)[threadIdx.x] =
          catalog_row(a, first + threadIdx.x, width, height, wide, records);
    }
    __syncthreads();
    auto* words = reinterpret_cast<unsigned long long*>(out + first);
    for (int64_t w = threadIdx.x; w < count * kRowWords; w += kRowThreads) words[w] = staged[w];
    if (device_copy != nullptr) {
      auto* copy = reinterpret_cast<unsigned long long*>(device_copy + first);
      for (int64_t w = threadIdx.x; w < count * kRowWords; w += kRowThreads) copy[w] = staged[w];
    }
    __syncthreads();
  }
}

bool wide_peak(const GpuContext& gpu) { return gpu.force_wide_peak || gpu.size() > 0xFFFFFFFFll; }

// Dual-image mode: the measured image's fluxes and peaks into the detection pass's rows (the
// CPU's MeasureStep merge).
__global__ void merge_measured_kernel(const DeviceSource* measured, const DeviceResults* results, int64_t capacity,
                                      DeviceSource* out) {
  const int64_t rows = valid_rows(results, capacity);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * kThreads) {
    kernels::take_measured_fluxes(out[r], measured[r]);
  }
}

// One pass of measure over `image` into `a` (reset first), subtracting `background`.
void measure_pass(GpuContext& gpu, const float* image, const Accumulators& a, const Background& background) {
  const int64_t n = gpu.size();
  const int rows_blocks = detail::blocks_for(gpu.catalog_capacity, kThreads, 1024);
  reset_kernel<<<rows_blocks, kThreads, 0, gpu.stream>>>(a, gpu.results.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  if (n == 0) return;
  const int blocks = detail::blocks_for((n + kRun - 1) / kRun, kThreads, static_cast<int64_t>(gpu.sm_count) * 32);
  first_pixel_kernel<<<detail::blocks_for(n, kThreads, static_cast<int64_t>(gpu.sm_count) * 32), kThreads, 0, gpu.stream>>>(
      gpu.labels.data(), gpu.width, n, a);
  IMFLOW_CUDA_CHECK_LAUNCH();
  if (wide_peak(gpu)) {
    accumulate_kernel<true><<<blocks, kThreads, 0, gpu.stream>>>(image, gpu.labels.data(), gpu.width, n, a, background,
                                                                 gpu.results.data());
    IMFLOW_CUDA_CHECK_LAUNCH();
    const int pblocks = detail::blocks_for(n, kThreads, static_cast<int64_t>(gpu.sm_count) * 32);
    position_kernel<<<pblocks, kThreads, 0, gpu.stream>>>(image, gpu.labels.data(), n, a, background);
  } else {
    accumulate_kernel<false><<<blocks, kThreads, 0, gpu.stream>>>(image, gpu.labels.data(), gpu.width, n, a, background,
                                                                  gpu.results.data());
  }
  IMFLOW_CUDA_CHECK_LAUNCH();
}

Background background_for(const MeasurementBackground& b, double gain, bool weight_gain = false) {
  return Background{b.map, b.level, b.rms_map, gain, b.stats, weight_gain && b.rms_map != nullptr};
}

}  // namespace

void measure(GpuContext& gpu, double gain) {
  if (!gpu.has_labels) throw std::logic_error("cuda::measure: the label step has not run on the GPU");
  DeviceGuard guard(gpu.device);
  gpu.accumulators.reserve(static_cast<size_t>(gpu.catalog_capacity));
  gpu.has_catalog = true;
  gpu.measure_gain = gain;
  if (gpu.dual_image) {  // the measured image's pass (its fluxes and peaks), then the detection image's
    MeasuredImageState& m = *gpu.measured;
    m.accumulators.reserve(static_cast<size_t>(gpu.catalog_capacity));
    measure_pass(gpu, gpu.image.data(), accumulators_of(m.accumulators, gpu.catalog_capacity),
                 background_for(measurement_background(gpu), gain));
  }
  measure_pass(gpu, gpu.dual_image ? gpu.detection.data() : gpu.image.data(), accumulators_of(gpu),
               background_for(detection_background(gpu), gain, gpu.weight_gain && gpu.has_weight_noise));
}

void detail::enqueue_catalog_rows(GpuContext& gpu) {
  if (!gpu.has_catalog) return;
  gpu.catalog_host.reserve(static_cast<size_t>(gpu.catalog_capacity));
  const int rows_blocks = detail::blocks_for(gpu.catalog_capacity, kThreads, 1024);
  const int staged_blocks = detail::blocks_for(gpu.catalog_capacity, kRowThreads, 1024);
  const DeblendRecord* records = gpu.has_deblend ? gpu.deblend->workspace.device_records() : nullptr;
  const int64_t width = gpu.width > 0 ? gpu.width : 1;
  rows_kernel<<<staged_blocks, kRowThreads, 0, gpu.stream>>>(accumulators_of(gpu), gpu.results.data(), width, gpu.height,
                                                       wide_peak(gpu), records, gpu.catalog_host.device_pointer(),
                                                       catalog_text_rows(gpu));
  IMFLOW_CUDA_CHECK_LAUNCH();
  if (!gpu.dual_image) return;
  MeasuredImageState& m = *gpu.measured;
  m.rows.reserve(static_cast<size_t>(gpu.catalog_capacity));
  rows_kernel<<<staged_blocks, kRowThreads, 0, gpu.stream>>>(accumulators_of(m.accumulators, gpu.catalog_capacity),
                                                       gpu.results.data(), width, gpu.height, wide_peak(gpu), records,
                                                       m.rows.data(), nullptr);
  IMFLOW_CUDA_CHECK_LAUNCH();
  merge_measured_kernel<<<rows_blocks, kThreads, 0, gpu.stream>>>(m.rows.data(), gpu.results.data(),
                                                                 gpu.catalog_capacity, gpu.catalog_host.device_pointer());
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
