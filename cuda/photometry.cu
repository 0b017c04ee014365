// The photometry kernels: the background-subtracted image and its mask, then one warp per
// catalog row running kernels::measure_photometry (the CPU's definition, compiled for the device,
// its lanes sharing the aperture pixels: cuda/warp_team.cuh), or a cluster of blocks per row for
// large sources (cuda/cluster_team.cuh; one block where the device has no clusters,
// cuda/block_team.cuh).
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "cuda/background_mesh.hpp"
#include "cuda/block_team.cuh"
#include "cuda/cluster_team.cuh"
#include "cuda/device_common.cuh"
#include "cuda/measured_image.hpp"
#include "cuda/photometry.hpp"
#include "cuda/warp_team.cuh"
#include "imflow/kernels/photometry.hpp"
#include "imflow/kernels/photometry_source.hpp"

namespace imflow::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kRowThreads = 128;  // a warp per source
constexpr int kRowsPerBlock = kRowThreads / WarpTeam::size;
constexpr int kRowBlocksPerSm = 3;  // 168 registers a thread: 7% faster than 255 (fewer warps)
constexpr int kBlockRowThreads = 512;  // 128 registers a thread; 2.1x faster than 256 on the largest rows
constexpr int kClusterBlocks = 8;      // a large row's blocks where clusters exist (sm_90): the portable maximum

// data = image - (map or float(median)) in float32, as PhotometrySetting::measure; mask 1 where
// that is not finite (and any_masked set).
__global__ void subtract_kernel(const float* __restrict__ image, const float* __restrict__ map,
                                const DeviceResults* results, bool level, int64_t n, float* __restrict__ data,
                                float* __restrict__ mask, int* any_masked) {
  const float median = level ? static_cast<float>(results->median) : 0.0f;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const float v = image[i] - (map != nullptr ? map[i] : median);
    data[i] = v;
    const bool bad = !isfinite(v);
    mask[i] = bad ? 1.0f : 0.0f;
    if (bad) *any_masked = 1;
  }
}

struct RowArgs {
  kernels::ApertureImage image;  // without its mask: set from any_masked
  const float* mask;
  const int* any_masked;
  kernels::ApertureImage kron;  // dual-image mode: the detection image (kron_any_masked not null), likewise
  const float* kron_mask;
  const int* kron_any_masked;
  const int32_t* labels;
  kernels::PhotometrySpec spec;
  const Source* sources;  // mapped pinned catalog rows
  int64_t count;
  const DeviceResults* results;  // not null: the rows are min(results->nlabels, count), in the stream
  const DeviceResults* noise;    // not null: the global noise is noise->std (read on the device)
  const DeviceResults* weight_gain;  // not null: WEIGHT_GAIN against weight_gain->std^2
  double* rows;
  float* vignets;
};

// The image as the rows see it (the mask only where a pixel is masked, the global noise read on
// the device), the gain term and the number of rows.
struct RowSetup {
  kernels::ApertureImage image;
  double weight_gain_noise2;
  int64_t count;
  kernels::ApertureImage kron;
};

__device__ RowSetup row_setup(const RowArgs& a) {
  RowSetup r{a.image, 0.0, a.count, a.kron};
  r.image.mask = *a.any_masked != 0 ? a.mask : nullptr;
  if (a.kron_any_masked != nullptr) r.kron.mask = *a.kron_any_masked != 0 ? a.kron_mask : nullptr;
  if (a.noise != nullptr) r.image.noise_value = a.noise->std;
  if (a.weight_gain != nullptr) r.weight_gain_noise2 = a.weight_gain->std * a.weight_gain->std;
  if (a.results != nullptr) r.count = min(static_cast<int64_t>(a.results->nlabels), a.count);
  return r;
}

template <typename Team>
__device__ void measure_row(const RowArgs& a, const RowSetup& r, const kernels::PhotometrySource& source, int64_t i) {
  const int64_t stride = a.spec.stride(), vignet_size = a.spec.vignet_size();
  kernels::measure_photometry<Team>(r.image, a.labels, a.spec, source, a.rows + i * stride,
                                    vignet_size > 0 ? a.vignets + i * vignet_size : nullptr, r.weight_gain_noise2,
                                    a.kron_any_masked != nullptr ? &r.kron : nullptr);
}

// A warp per row, except the rows of large sources (the cluster or block kernel's).
__global__ void __launch_bounds__(kRowThreads, kRowBlocksPerSm) rows_kernel(RowArgs a) {
  const RowSetup r = row_setup(a);
  // Whole warps take a row each, so every lane of a warp reaches the team's shuffles.
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / WarpTeam::size; i < r.count;
       i += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const kernels::PhotometrySource source = kernels::photometry_source(a.sources[i]);
    if (source.a >= kBlockRowMinA) continue;
    measure_row<WarpTeam>(a, r, source, i);
  }
}

// A block per row of a large source: its apertures' pixels shared by kBlockRowThreads threads.
__global__ void __launch_bounds__(kBlockRowThreads) block_rows_kernel(RowArgs a) {
  const RowSetup r = row_setup(a);
  for (int64_t i = blockIdx.x; i < r.count; i += gridDim.x) {
    const kernels::PhotometrySource source = kernels::photometry_source(a.sources[i]);
    if (!(source.a >= kBlockRowMinA)) continue;
    measure_row<BlockTeam<kBlockRowThreads>>(a, r, source, i);
  }
}

// The same with a cluster of kClusterBlocks blocks per row (sm_90 and later; the launch needs
// the cluster attribute, see launch_rows).
__global__ void __launch_bounds__(kBlockRowThreads) cluster_rows_kernel(RowArgs a) {
#if __CUDA_ARCH__ >= 900
  const RowSetup r = row_setup(a);
  const int64_t clusters = gridDim.x / kClusterBlocks;
  for (int64_t i = blockIdx.x / kClusterBlocks; i < r.count; i += clusters) {
    const kernels::PhotometrySource source = kernels::photometry_source(a.sources[i]);
    if (!(source.a >= kBlockRowMinA)) continue;
    measure_row<ClusterTeam<kClusterBlocks, kBlockRowThreads>>(a, r, source, i);
  }
#endif
}

cudaLaunchConfig_t cluster_config(int clusters, cudaStream_t stream, cudaLaunchAttribute& attribute) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(clusters * kClusterBlocks));
  config.blockDim = dim3(kBlockRowThreads);
  config.stream = stream;
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = kClusterBlocks;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return config;
}

// How many clusters of cluster_rows_kernel the device holds at once; 0 without cluster launches.
int resident_row_clusters(int device, int sm_count) {
  int supported = 0;
  IMFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrClusterLaunch, device));
  if (supported == 0) return 0;
  cudaLaunchAttribute attribute{};
  const cudaLaunchConfig_t config = cluster_config(std::max(1, sm_count / kClusterBlocks), nullptr, attribute);
  int clusters = 0;
  IMFLOW_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, cluster_rows_kernel, &config));
  return clusters;
}

// The row kernels over `rows` rows (at most; the in-stream rows are counted on the device): a
// warp per row, then the large sources' rows on clusters of blocks where the device has them,
// else on single blocks.
void launch_rows(PhotometryState& st, const GpuContext& gpu, const RowArgs& a, int64_t rows) {
  rows_kernel<<<detail::blocks_for(rows, kRowsPerBlock), kRowThreads, 0, gpu.stream>>>(a);
  IMFLOW_CUDA_CHECK_LAUNCH();
  if (st.row_clusters < 0) st.row_clusters = resident_row_clusters(gpu.device, gpu.sm_count);
  if (st.row_clusters > 0) {
    cudaLaunchAttribute attribute{};
    const cudaLaunchConfig_t config = cluster_config(st.row_clusters, gpu.stream, attribute);
    IMFLOW_CUDA_CHECK(cudaLaunchKernelEx(&config, cluster_rows_kernel, a));
    return;
  }
  block_rows_kernel<<<detail::blocks_for(rows, 1, static_cast<int64_t>(gpu.sm_count) * 4), kBlockRowThreads, 0,
                      gpu.stream>>>(a);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

// The first min(results->nlabels, capacity) rows of `stride` values from device memory into
// mapped host memory, consecutive threads storing consecutive values: a warp's stores cross PCIe
// as 256-byte runs, where the rows kernel's would leave one 8-byte value at a time.
__global__ void copy_rows_kernel(const double* __restrict__ rows, const DeviceResults* results, int64_t capacity,
                                 int64_t stride, double* out) {
  const int64_t count = min(static_cast<int64_t>(results->nlabels), capacity) * stride;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * kThreads)
    out[i] = rows[i];
}

}  // namespace

void photometry(GpuContext& gpu, const kernels::PhotometrySpec& spec) {
  if (!gpu.has_catalog) throw std::logic_error("cuda::photometry: the measure step has not run on the GPU");
  DeviceGuard guard(gpu.device);
  if (!gpu.photometry) gpu.photometry = std::make_shared<PhotometryState>();
  PhotometryState& st = *gpu.photometry;
  const int64_t n = gpu.size();
  st.data.reserve(static_cast<size_t>(n) + 1);
  st.mask.reserve(static_cast<size_t>(n) + 1);
  st.any_masked.reserve(1);
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(st.any_masked.data(), 0, sizeof(int), gpu.stream));
  gpu.photometry_spec = spec;
  gpu.has_photometry = true;
  st.kron_image = gpu.dual_image && spec.needs_auto();  // dual-image mode: FLUX_AUTO's Kron radii on the detection image
  if (n == 0) return;
  const MeasurementBackground background = measurement_background(gpu);
  const int blocks = detail::blocks_for(n, kThreads, static_cast<int64_t>(gpu.sm_count) * 32);
  subtract_kernel<<<blocks, kThreads, 0, gpu.stream>>>(gpu.image.data(), background.map, background.stats,
                                                       background.level, n, st.data.data(), st.mask.data(),
                                                       st.any_masked.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  if (!st.kron_image) return;
  st.detection_data.reserve(static_cast<size_t>(n) + 1);
  st.detection_mask.reserve(static_cast<size_t>(n) + 1);
  st.detection_any_masked.reserve(1);
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(st.detection_any_masked.data(), 0, sizeof(int), gpu.stream));
  const MeasurementBackground detection = detection_background(gpu);
  subtract_kernel<<<blocks, kThreads, 0, gpu.stream>>>(unfiltered_detection(gpu), detection.map, detection.stats,
                                                       detection.level, n, st.detection_data.data(),
                                                       st.detection_mask.data(), st.detection_any_masked.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
}

namespace {
// The rows kernel's arguments for `count` rows of gpu.catalog_host: the background-subtracted
// image, its noise (the mesh RMS map, or the global std: `noise_std`, NaN without a background,
// unless the kernel reads it from the device), the gain, the label map for mask_neighbours.
RowArgs row_args(GpuContext& gpu, int64_t count, double noise_std) {
  PhotometryState& st = *gpu.photometry;
  RowArgs a{};
  a.image.data = {st.data.data(), gpu.width, gpu.height};
  a.image.gain = gpu.measure_gain;
  a.image.noise_kind = kernels::NoiseKind::stddev;
  const MeasurementBackground background = measurement_background(gpu);
  if (background.rms_map != nullptr) {
    a.image.noise = background.rms_map;
    if (background.weight_gain) a.weight_gain = background.stats;
  } else {  // NaN without a noise estimate: NaN errors
    a.image.noise_value = background.any ? noise_std : NAN;
  }
  a.mask = st.mask.data();
  a.any_masked = st.any_masked.data();
  if (st.kron_image) {
    a.kron.data = {st.detection_data.data(), gpu.width, gpu.height};
    a.kron_mask = st.detection_mask.data();
    a.kron_any_masked = st.detection_any_masked.data();
  }
  a.labels = gpu.has_labels ? gpu.labels.data() : nullptr;
  a.image.detected = gpu.has_mask ? gpu.mask.data() : nullptr;  // SExtractor's blanked pixels, less what CLEAN removed
  a.spec = gpu.photometry_spec;
  a.sources = gpu.catalog_host.device_pointer();
  a.count = count;
  return a;
}
}  // namespace

bool enqueue_catalog_photometry(GpuContext& gpu) {
  PhotometryState& st = *gpu.photometry;
  const kernels::PhotometrySpec& spec = gpu.photometry_spec;
  st.rows_in_stream = false;
  if (spec.vignet_size() > 0 || spec.stride() == 0) return false;
  const int64_t capacity = gpu.catalog_capacity;
  const auto values = static_cast<size_t>(capacity * spec.stride());
  st.rows.reserve(values + 1);
  st.rows_host.reserve(values + 1);
  RowArgs a = row_args(gpu, capacity, NAN);
  const MeasurementBackground background = measurement_background(gpu);
  if (background.rms_map == nullptr && background.any) a.noise = background.stats;
  a.results = gpu.results.data();
  a.rows = st.rows.data();
  launch_rows(st, gpu, a, capacity);
  copy_rows_kernel<<<detail::blocks_for(static_cast<int64_t>(values), kThreads, static_cast<int64_t>(gpu.sm_count) * 8),
                     kThreads, 0, gpu.stream>>>(st.rows.data(), gpu.results.data(), capacity, spec.stride(),
                                                st.rows_host.device_pointer());
  IMFLOW_CUDA_CHECK_LAUNCH();
  st.rows_in_stream = true;
  return true;
}

bool collect_catalog_photometry(GpuContext& gpu, int64_t count, std::vector<double>& rows, std::vector<float>& vignets) {
  PhotometryState& st = *gpu.photometry;
  if (!st.rows_in_stream || count > gpu.catalog_capacity) return false;
  const auto stride = static_cast<size_t>(gpu.photometry_spec.stride());
  rows.assign(st.rows_host.data(), st.rows_host.data() + static_cast<size_t>(count) * stride);
  vignets.clear();
  return true;
}

void measure_catalog_photometry(GpuContext& gpu, int64_t count, std::vector<double>& rows, std::vector<float>& vignets) {
  const kernels::PhotometrySpec& spec = gpu.photometry_spec;
  const auto stride = static_cast<size_t>(spec.stride()), vignet_size = static_cast<size_t>(spec.vignet_size());
  const auto n = static_cast<size_t>(count);
  rows.assign(n * stride, 0.0);
  vignets.assign(n * vignet_size, 0.0f);
  if (n == 0 || (stride == 0 && vignet_size == 0)) return;
  DeviceGuard guard(gpu.device);
  PhotometryState& st = *gpu.photometry;
  st.rows.reserve(n * stride + 1);
  st.vignets.reserve(n * vignet_size + 1);
  RowArgs a = row_args(gpu, count, measurement_stats_host(gpu).std);
  a.rows = st.rows.data();
  a.vignets = st.vignets.data();
  launch_rows(st, gpu, a, count);
  if (stride > 0) {
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(rows.data(), st.rows.data(), n * stride * sizeof(double), cudaMemcpyDeviceToHost,
                                      gpu.stream));
  }
  if (vignet_size > 0) {
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(vignets.data(), st.vignets.data(), n * vignet_size * sizeof(float),
                                      cudaMemcpyDeviceToHost, gpu.stream));
  }
  IMFLOW_CUDA_CHECK(cudaStreamSynchronize(gpu.stream));
}

}  // namespace imflow::cuda
