// The catalog rows from measure's accumulators: a thread per row computes the columns (shape,
// errors, flags, a blend child's centre), a block writes its rows to mapped host memory as whole
// runs of bytes.
#include "cuda/catalog_text.hpp"
#include "cuda/deblend_objects.hpp"
#include "cuda/device_common.cuh"
#include "cuda/measure.hpp"
#include "cuda/measure_accumulators.cuh"
#include "cuda/measured_image.hpp"
#include "imflow/kernels/dual_image.hpp"
#include "imflow/kernels/saturation.hpp"
#include "imflow/kernels/source_shape.hpp"

namespace imflow::cuda {
namespace {

using detail::Accumulators;
using detail::accumulators_of;
using detail::valid_rows;
using detail::wide_peak;

constexpr int kThreads = 256;

// One catalog row from the accumulators. records (null: none): deblend's objects; a blend's
// child gets SEP's centre, its moments about it, kFlagDeblended, and the edge flag of its branch,
// an object SExtractor's CLEAN merged others into its own centre (kernels::measure_deblended's rows).
__device__ DeviceSource catalog_row(const Accumulators& a, int64_t r, int64_t width, int64_t height, bool wide,
                                    const DeblendRecord* records, double saturation, const float* back_map) {
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
  if (records != nullptr && records[r].singular != 0) s.flags |= kFlagSingular;  // SEP's analyse, or these moments
  if (kernels::reaches_saturation(s, saturation, back_map, width, height)) s.flags |= kFlagSaturated;
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
                                                           double saturation, const float* back_map, DeviceSource* out,
                                                           DeviceSource* device_copy) {
  __shared__ unsigned long long staged[kRowThreads * kRowWords];
  const int64_t rows = valid_rows(results, a.capacity);
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kRowThreads; first < rows;
       first += static_cast<int64_t>(gridDim.x) * kRowThreads) {
    const int64_t count = rows - first < kRowThreads ? rows - first : kRowThreads;
    if (threadIdx.x < count) {
      reinterpret_cast<DeviceSource*>(staged)[threadIdx.x] =
          catalog_row(a, first + threadIdx.x, width, height, wide, records, saturation, back_map);
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

// Two passes (dual-image mode, FILTER Y, SExtractor's CLEAN): the measured image's fluxes and
// peaks into the shapes pass's rows, after CLEAN also the merged pixel counts, boxes and flags
// (the CPU's MeasureStep merge); the saturated flag from the measured peak.
__global__ void merge_measured_kernel(const DeviceSource* measured, const DeviceResults* results, int64_t capacity,
                                      bool merged, double saturation, const float* back_map, int64_t width,
                                      int64_t height, DeviceSource* out) {
  const int64_t rows = valid_rows(results, capacity);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * kThreads) {
    if (merged) kernels::take_merged_sums(out[r], measured[r]);
    else kernels::take_measured_fluxes(out[r], measured[r]);
    out[r].flags = (out[r].flags & ~kFlagSaturated) |
                   (kernels::reaches_saturation(out[r], saturation, back_map, width, height) ? kFlagSaturated : 0);
  }
}

}  // namespace

void detail::enqueue_catalog_rows(GpuContext& gpu) {
  if (!gpu.has_catalog) return;
  gpu.catalog_host.reserve(static_cast<size_t>(gpu.catalog_capacity));
  const int rows_blocks = detail::blocks_for(gpu.catalog_capacity, kThreads, 1024);
  const int staged_blocks = detail::blocks_for(gpu.catalog_capacity, kRowThreads, 1024);
  const DeblendRecord* records = gpu.has_deblend ? gpu.deblend->workspace.device_records() : nullptr;
  const int64_t width = gpu.width > 0 ? gpu.width : 1;
  // The measured image's background map (null: the global background, whose peaks are as read).
  const float* back_map = measurement_background(gpu).map;
  rows_kernel<<<staged_blocks, kRowThreads, 0, gpu.stream>>>(accumulators_of(gpu), gpu.results.data(), width, gpu.height,
                                                       wide_peak(gpu), records, gpu.saturation, back_map,
                                                       gpu.catalog_host.device_pointer(), catalog_text_rows(gpu));
  IMFLOW_CUDA_CHECK_LAUNCH();
  if (!two_pass_measure(gpu)) return;
  MeasuredImageState& m = *gpu.measured;
  m.rows.reserve(static_cast<size_t>(gpu.catalog_capacity));
  rows_kernel<<<staged_blocks, kRowThreads, 0, gpu.stream>>>(accumulators_of(m.accumulators, gpu.catalog_capacity),
                                                       gpu.results.data(), width, gpu.height, wide_peak(gpu), records,
                                                       gpu.saturation, back_map, m.rows.data(), nullptr);
  IMFLOW_CUDA_CHECK_LAUNCH();
  merge_measured_kernel<<<rows_blocks, kThreads, 0, gpu.stream>>>(
      m.rows.data(), gpu.results.data(), gpu.catalog_capacity, m.merged_shapes, gpu.saturation, back_map, width,
      gpu.height, gpu.catalog_host.device_pointer());
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
