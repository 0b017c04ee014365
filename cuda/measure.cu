// Measurement kernels. One pass over the labels lists the sources' row segments (a segment: at
// most kSpan pixels of one label, inside one row and one aligned span of kSpan pixels) in raster
// order within each block's stretch of the image, and finds each label's first pixel. Then each
// lane of a warp sums one segment, the lanes holding one label merge their sums, and each group
// flushes once with float64/64-bit atomics. The background pixels, most of an image, are read
// once as labels and never again; a large source's rows become a few flushes each.
#include <climits>
#include <cub/block/block_scan.cuh>
#include <stdexcept>

#include "cuda/background_mesh.hpp"
#include "cuda/device_common.cuh"
#include "cuda/measure.hpp"
#include "cuda/measure_accumulators.cuh"
#include "cuda/measure_run.cuh"
#include "cuda/measured_image.hpp"
#include "imflow/kernels/source_shape.hpp"

namespace imflow::cuda {
namespace {

using detail::Accumulators;
using detail::accumulators_of;
using detail::Run;
using detail::valid_rows;
using detail::wide_peak;

constexpr int kThreads = 256;
constexpr int kSpan = 8;  // pixels per thread, in the segments pass and when walking every pixel
static_assert(kSpan == 8, "segments_kernel loads a span as two int4");
constexpr int kAccumulateBlocksPerSm = 2;

// The segment list (GpuContext::measure_segments): how many segments the pass found (more than
// `capacity`: the list overflowed, accumulate walks every pixel instead), then each segment as
// its first pixel's raster index << 8 | its length.
struct Segments {
  unsigned long long* count;
  unsigned long long* entries;
  int64_t capacity;
};

// What measure subtracts (kernels::MeasureBackground): the mesh map from every value, or the
// global median (results->median) for flux_iso and the moments only; and the noise of the error
// columns: the mesh RMS map, or the global std (results->std), or none (NaN errors).
struct Background {
  const float* map;     // null: none
  bool level;           // subtract stats->median for w
  const float* rms_map; // null: the global std (stats->std) when `std_noise`, else no noise estimate
  double gain;          // e-/ADU, 0: no Poisson term
  const DeviceResults* stats;
  bool weight_gain;     // the weight map's WEIGHT_GAIN: the Poisson term x rms^2 / stats->std^2
  bool std_noise;       // the noise is stats->std (a global background, or measure's noise: global)
};

__global__ void reset_kernel(Accumulators a, const DeviceResults* results, Segments segments) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *segments.count = 0;
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

// Each label's first pixel in raster order (the smallest index: each run's start competes), the
// origin of its moments as on the CPU (kernels::accumulate_sources), and the segment list: a
// thread per span of kSpan pixels, a block's segments in raster order at one atomic's offset.
__global__ void __launch_bounds__(kThreads)
    segments_kernel(const int32_t* __restrict__ labels, int64_t width, int64_t n, Accumulators a, Segments segments) {
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ unsigned long long block_offset;
  const int64_t spans = (n + kSpan - 1) / kSpan;
  for (int64_t block_first = static_cast<int64_t>(blockIdx.x) * kThreads; block_first < spans;
       block_first += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t begin = (block_first + threadIdx.x) * kSpan;
    unsigned starts = 0;     // bit k: a segment starts at begin + k
    unsigned continues = 0;  // bit k: begin + k belongs to the segment of begin + k - 1
    int64_t x = begin % width;
    int32_t previous = x > 0 && begin < n ? labels[begin - 1] : 0;  // the label before, in the row
    int32_t span[kSpan];  // two 16-byte loads (begin is a multiple of 8 labels)
    if (begin + kSpan <= n) {
      const int4 low = __ldg(reinterpret_cast<const int4*>(labels + begin));
      const int4 high = __ldg(reinterpret_cast<const int4*>(labels + begin) + 1);
      span[0] = low.x, span[1] = low.y, span[2] = low.z, span[3] = low.w;
      span[4] = high.x, span[5] = high.y, span[6] = high.z, span[7] = high.w;
    } else {
#pragma unroll
      for (int k = 0; k < kSpan; ++k) span[k] = begin + k < n ? labels[begin + k] : 0;
    }
#pragma unroll
    for (int k = 0; k < kSpan; ++k) {
      const int64_t i = begin + k;
      const int32_t l = span[k];
      const bool run_start = l > 0 && (x == 0 || previous != l);
      if (run_start && l <= a.capacity) atomicMin(a.first + l - 1, static_cast<unsigned long long>(i));
      if (l > 0 && (run_start || k == 0)) starts |= 1u << k;
      else if (l > 0) continues |= 1u << k;
      previous = l;
      if (++x == width) x = 0;
    }
    int offset = 0, total = 0;
    Scan(scan_storage).ExclusiveSum(__popc(starts), offset, total);
    if (threadIdx.x == 0 && total > 0) block_offset = atomicAdd(segments.count, static_cast<unsigned long long>(total));
    __syncthreads();
    auto entry = block_offset + static_cast<unsigned long long>(offset);
    __syncthreads();  // every thread has read block_offset before the next stretch's is written
    for (; starts != 0; starts &= starts - 1, ++entry) {
      const int k = __ffs(static_cast<int>(starts)) - 1;
      const int length = __ffs(static_cast<int>(~(continues >> (k + 1))));  // 1 + the pixels continuing it
      if (entry < static_cast<unsigned long long>(segments.capacity)) {
        segments.entries[entry] = static_cast<unsigned long long>(begin + k) << 8 | static_cast<unsigned long long>(length);
      }
    }
  }
}

// Non-finite values never win the peak (they rank below every finite value).
__device__ __forceinline__ uint32_t peak_key(float v) { return isfinite(v) ? detail::float_key(v) : 0u; }

// Whether a pixel of columns x0..x1 in rows y - 1..y + 1 (inside the image) is not finite: for
// x0 = x - 1, x1 = x + 1, whether (x, y) or one of its 8 neighbours is (kFlagMaskedNeighbour);
// for a segment's pixels x..x + length - 1 of row y, x - 1 and x + length, whether one of them is.
__device__ bool masked_window(const float* __restrict__ image, int64_t width, int64_t height, int64_t x0, int64_t x1,
                              int64_t y) {
  x0 = x0 < 0 ? 0 : x0;
  x1 = x1 < width ? x1 : width - 1;
  bool masked = false;
  for (int64_t ny = y - 1; ny <= y + 1; ++ny) {
    if (ny < 0 || ny >= height) continue;
#pragma unroll 4
    for (int64_t nx = x0; nx <= x1; ++nx) masked |= !isfinite(__ldg(image + ny * width + nx));
  }
  return masked;
}

// Sums pixels into runs. Wide = true: images of 2^32 pixels or more, whose run peak holds the
// value's key only (position_kernel finds where).
template <bool Wide>
struct PixelSums {
  const float* __restrict__ image;
  const int32_t* __restrict__ labels;
  int64_t width, height;
  Accumulators a;
  Background background;
  double level, global_rms, backnoise2;
  int64_t cx = 0, cy = 0;  // the current label's first pixel: the moments' origin, as on the CPU

  __device__ PixelSums(const float* image, const int32_t* labels, int64_t width, int64_t n, const Accumulators& a,
                       const Background& b)
      : image(image), labels(labels), width(width), height(n / width), a(a), background(b),
        level(b.level ? b.stats->median : 0.0), global_rms(b.std_noise ? b.stats->std : NAN),
        backnoise2(b.weight_gain ? b.stats->std * b.stats->std : 0.0) {}

  __device__ void start(Run& r, int32_t l) {
    r = Run{};
    r.label = l;
    if (l > 0 && l <= a.capacity) {
      const auto origin = static_cast<int64_t>(a.first[l - 1]);
      cy = origin / width;
      cx = origin - cy * width;
    }
  }

  __device__ void add(Run& r, int64_t i, int64_t x, int64_t y) const {
    // SEP measures data - bkg in float32: so does the CPU.
    const float v = background.map != nullptr ? image[i] - background.map[i] : image[i];
    const double d = v;
    const double w = d - level, dx = static_cast<double>(x - cx), dy = static_cast<double>(y - cy);
    r.w.add(w, dx, dy);
    const double rms = background.rms_map != nullptr ? static_cast<double>(background.rms_map[i]) : global_rms;
    r.v.add(kernels::pixel_variance(rms, w, background.gain, backnoise2), dx, dy);
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
};

// The segment list overflowed (crowded fields): a thread per kSpan pixels of the whole image,
// flushing each run of a label it walks through.
template <bool Wide>
__device__ void walk_every_pixel(PixelSums<Wide>& sums, int64_t n, DeviceResults* results) {
  const int64_t spans = (n + kSpan - 1) / kSpan;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < spans;
       t += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t begin = t * kSpan;
    const int64_t end = begin + kSpan < n ? begin + kSpan : n;
    int64_t y = begin / sums.width;
    int64_t x = begin - y * sums.width;
    Run r;
    for (int64_t i = begin; i < end; ++i) {
      const int32_t l = sums.labels[i];
      if (l != r.label) {
        detail::flush(r, sums.a, results);
        sums.start(r, l);
      }
      if (l > 0) {
        sums.add(r, i, x, y);
        if (masked_window(sums.image, sums.width, sums.height, x - 1, x + 1, y)) r.flags |= kFlagMaskedNeighbour;
      }
      if (++x == sums.width) {
        x = 0;
        ++y;
      }
    }
    detail::flush(r, sums.a, results);
  }
}

// Each lane one listed segment (consecutive lanes, consecutive segments); the lanes of one label
// merge before flushing. Up to 128 registers: the merge shuffles a second run.
template <bool Wide>
__global__ void __launch_bounds__(kThreads, kAccumulateBlocksPerSm)
    accumulate_kernel(const float* __restrict__ image, const int32_t* __restrict__ labels, int64_t width, int64_t n,
                      Accumulators a, Background background, DeviceResults* results, Segments segments) {
  PixelSums<Wide> sums(image, labels, width, n, a, background);
  const unsigned long long listed = *segments.count;
  if (listed > static_cast<unsigned long long>(segments.capacity)) return walk_every_pixel(sums, n, results);
  const auto units = static_cast<int64_t>(listed);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const int lane = static_cast<int>(threadIdx.x % 32);
  // Every lane of a warp takes the same trips (the merge needs all 32).
  for (int64_t unit = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; unit - lane < units; unit += stride) {
    Run r;
    if (unit < units) {
      const unsigned long long entry = segments.entries[unit];
      const auto begin = static_cast<int64_t>(entry >> 8);
      const int64_t y = begin / width, x = begin - y * width;
      sums.start(r, labels[begin]);
      const int length = static_cast<int>(entry & 0xFF);
      for (int k = 0; k < length; ++k) sums.add(r, begin + k, x + k, y);
      if (masked_window(image, width, sums.height, x - 1, x + length, y)) r.flags |= kFlagMaskedNeighbour;
    }
    if (detail::merge_lane_groups(r)) detail::flush(r, a, results);
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

// The labels of the pixels still detected (1 in `mask`): each object's own, without those CLEAN
// merged into it.
__global__ void own_labels_kernel(const int32_t* __restrict__ labels, const uint8_t* __restrict__ mask, int64_t n,
                                  int32_t* __restrict__ own) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads)
    own[i] = mask[i] == 1 ? labels[i] : 0;
}

// One pass of measure over `image` and `labels` into `a` (reset first), subtracting `background`.
void measure_pass(GpuContext& gpu, const float* image, const int32_t* labels, const Accumulators& a,
                  const Background& background) {
  const int64_t n = gpu.size();
  // Room for a segment per 8 pixels (a crowded field's sources covering a third of the image in
  // runs of 3 pixels); beyond that accumulate walks every pixel.
  const int64_t capacity = n / 8 + 4096;
  gpu.measure_segments.reserve(static_cast<size_t>(capacity) + 1);
  const Segments segments{gpu.measure_segments.data(), gpu.measure_segments.data() + 1, capacity};
  const int rows_blocks = detail::blocks_for(gpu.catalog_capacity, kThreads, 1024);
  reset_kernel<<<rows_blocks, kThreads, 0, gpu.stream>>>(a, gpu.results.data(), segments);
  IMFLOW_CUDA_CHECK_LAUNCH();
  if (n == 0) return;
  const int64_t pixel_blocks = static_cast<int64_t>(gpu.sm_count) * 32;
  segments_kernel<<<detail::blocks_for((n + kSpan - 1) / kSpan, kThreads, pixel_blocks), kThreads, 0, gpu.stream>>>(
      labels, gpu.width, n, a, segments);
  IMFLOW_CUDA_CHECK_LAUNCH();
  // As many blocks as are resident at once: the grid strides over what is listed.
  const int blocks = detail::blocks_for((n + kSpan - 1) / kSpan, kThreads,
                                        static_cast<int64_t>(gpu.sm_count) * kAccumulateBlocksPerSm);
  if (wide_peak(gpu)) {
    accumulate_kernel<true><<<blocks, kThreads, 0, gpu.stream>>>(image, labels, gpu.width, n, a, background,
                                                                 gpu.results.data(), segments);
    IMFLOW_CUDA_CHECK_LAUNCH();
    position_kernel<<<detail::blocks_for(n, kThreads, pixel_blocks), kThreads, 0, gpu.stream>>>(
        image, labels, n, a, background);
  } else {
    accumulate_kernel<false><<<blocks, kThreads, 0, gpu.stream>>>(image, labels, gpu.width, n, a, background,
                                                                  gpu.results.data(), segments);
  }
  IMFLOW_CUDA_CHECK_LAUNCH();
}

Background background_for(const MeasurementBackground& b, double gain) {
  return Background{b.map, b.level, b.rms_map, gain, b.stats, b.weight_gain && b.rms_map != nullptr, b.std_noise};
}

}  // namespace

void measure(GpuContext& gpu, double gain) {
  if (!gpu.has_labels) throw std::logic_error("cuda::measure: the label step has not run on the GPU");
  DeviceGuard guard(gpu.device);
  gpu.accumulators.reserve(static_cast<size_t>(gpu.catalog_capacity));
  gpu.has_catalog = true;
  gpu.measure_gain = gain;
  if (two_pass_measure(gpu)) {  // the measured image's pass (its fluxes and peaks), then the shapes'
    if (!gpu.measured) gpu.measured = std::make_shared<MeasuredImageState>();
    MeasuredImageState& m = *gpu.measured;
    m.accumulators.reserve(static_cast<size_t>(gpu.catalog_capacity));
    measure_pass(gpu, gpu.image.data(), gpu.labels.data(), accumulators_of(m.accumulators, gpu.catalog_capacity),
                 background_for(measurement_background(gpu), gain));
  }
  // The shapes: after FILTER Y the filtered values (already less the background), in dual-image
  // mode otherwise the detection image as read, else the image; after SExtractor's CLEAN over
  // each object's own pixels.
  const int32_t* labels = gpu.labels.data();
  if (gpu.measured && gpu.measured->merged_shapes) {
    const int64_t n = gpu.size();
    gpu.measured->own_labels.reserve(static_cast<size_t>(n) + 1);
    own_labels_kernel<<<detail::blocks_for(n, kThreads, static_cast<int64_t>(gpu.sm_count) * 16), kThreads, 0,
                        gpu.stream>>>(gpu.labels.data(), gpu.mask.data(), n, gpu.measured->own_labels.data());
    IMFLOW_CUDA_CHECK_LAUNCH();
    labels = gpu.measured->own_labels.data();
  }
  if (gpu.filtered_shapes) {
    measure_pass(gpu, gpu.detection.data(), labels, accumulators_of(gpu),
                 background_for(noise_only(detection_background(gpu)), gain));
  } else {
    measure_pass(gpu, gpu.dual_image ? unfiltered_detection(gpu) : gpu.image.data(), labels, accumulators_of(gpu),
                 background_for(detection_background(gpu), gain));
  }
}
}  // namespace imflow::cuda
