// Threshold kernel: one pass, 16-byte loads, 4-byte mask stores, a block-reduced pixel count.
#include <cub/block/block_reduce.cuh>
#include <stdexcept>

#include "cuda/background_mesh.hpp"
#include "cuda/device_common.cuh"
#include "cuda/segment.hpp"

namespace imflow::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint32_t above(float v, double threshold) {
  return (isfinite(v) && static_cast<double>(v) > threshold) ? 1u : 0u;
}

__global__ void __launch_bounds__(kThreads)
    threshold_kernel(const float* __restrict__ image, int64_t n, double nsigma, bool relative_to_zero,
                     uint8_t* __restrict__ mask, DeviceResults* results) {
  using BlockReduce = cub::BlockReduce<unsigned long long, kThreads>;
  __shared__ typename BlockReduce::TempStorage storage;
  const double threshold = (relative_to_zero ? 0.0 : results->median) + nsigma * results->std;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const int64_t start = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  unsigned long long count = 0;
  const int64_t n4 = n / 4;
  for (int64_t i = start; i < n4; i += stride) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(image) + i);
    const uint32_t m = above(v.x, threshold) | above(v.y, threshold) << 8 | above(v.z, threshold) << 16 |
                       above(v.w, threshold) << 24;
    reinterpret_cast<uint32_t*>(mask)[i] = m;
    count += __popc(m);
  }
  for (int64_t i = n4 * 4 + start; i < n; i += stride) {
    const uint32_t m = above(image[i], threshold);
    mask[i] = static_cast<uint8_t>(m);
    count += m;
  }
  count = BlockReduce(storage).Sum(count);
  if (threadIdx.x == 0 && count != 0) atomicAdd(reinterpret_cast<unsigned long long*>(&results->mask_pixels), count);
  if (blockIdx.x == 0 && threadIdx.x == 0) results->threshold = threshold;
}

// Against the mesh maps: p - back[i] > nsigma * (rms ? rms[i] : globalrms), in float64 (back null: 0).
__global__ void __launch_bounds__(kThreads)
    threshold_local_kernel(const float* __restrict__ image, const float* __restrict__ back,
                           const float* __restrict__ rms, int64_t n, double nsigma, uint8_t* __restrict__ mask,
                           DeviceResults* results) {
  using BlockReduce = cub::BlockReduce<unsigned long long, kThreads>;
  __shared__ typename BlockReduce::TempStorage storage;
  const double global_threshold = nsigma * results->std;
  unsigned long long count = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const float v = image[i];
    const double threshold = rms != nullptr ? nsigma * static_cast<double>(rms[i]) : global_threshold;
    const double level = back != nullptr ? static_cast<double>(back[i]) : 0.0;
    const bool on = isfinite(v) && static_cast<double>(v) - level > threshold;
    mask[i] = on ? 1 : 0;
    count += on;
  }
  count = BlockReduce(storage).Sum(count);
  if (threadIdx.x == 0 && count != 0) atomicAdd(reinterpret_cast<unsigned long long*>(&results->mask_pixels), count);
  if (blockIdx.x == 0 && threadIdx.x == 0) results->threshold = global_threshold;
}

}  // namespace

void segment(GpuContext& gpu, double nsigma, bool relative_to_zero) {
  segment(gpu, nsigma, relative_to_zero ? Threshold::zero : Threshold::background);
}

void segment(GpuContext& gpu, const SegmentThreshold& how) {
  const Threshold relative_to = how.rms_map                                            ? Threshold::rms_map
                                : how.subtract_background || how.detection_subtracted ? Threshold::background
                                                                                      : Threshold::zero;
  segment(gpu, how.nsigma, relative_to, how.detection_subtracted);
}

void segment(GpuContext& gpu, double nsigma, Threshold relative_to, bool detection_subtracted) {
  if (detection_subtracted && relative_to == Threshold::background) relative_to = Threshold::zero;
  if (!gpu.has_background) throw std::logic_error("cuda::segment: the background step has not run on the GPU");
  if (relative_to == Threshold::rms_map && !gpu.has_background_maps)
    throw std::runtime_error("segment: relative_to: rms_map needs the background step's method: mesh");
  DeviceGuard guard(gpu.device);
  const int64_t n = gpu.size();
  gpu.mask.reserve(static_cast<size_t>(n) + 4);
  const float* source = gpu.has_detection ? gpu.detection.data() : gpu.image.data();
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(&gpu.results.data()->mask_pixels, 0, sizeof(long long), gpu.stream));
  if (gpu.has_background_maps && relative_to != Threshold::zero) {
    const MeshBackgroundState& maps = *gpu.mesh_background;
    const int blocks = detail::blocks_for(n, kThreads, static_cast<int64_t>(gpu.sm_count) * 16);
    threshold_local_kernel<<<blocks, kThreads, 0, gpu.stream>>>(
        source, detection_subtracted ? nullptr : maps.back_map.data(),
        relative_to == Threshold::rms_map ? maps.rms_map.data() : nullptr, n, nsigma,
        gpu.mask.data(), gpu.results.data());
  } else {
    const int blocks = detail::blocks_for(n / 4 + 1, kThreads, static_cast<int64_t>(gpu.sm_count) * 16);
    threshold_kernel<<<blocks, kThreads, 0, gpu.stream>>>(source, n, nsigma, relative_to == Threshold::zero,
                                                         gpu.mask.data(), gpu.results.data());
  }
  IMFLOW_CUDA_CHECK_LAUNCH();
  gpu.has_threshold = true;
  gpu.has_mask = true;
}

}  // namespace imflow::cuda
