// SEP's float32 detection arithmetic, one thread per pixel (compiled without FMA contraction,
// like the CPU twin in src/kernels/segment_sep.cpp).
#include <cub/block/block_reduce.cuh>
#include <stdexcept>

#include "cuda/background_mesh.hpp"
#include "cuda/device_common.cuh"
#include "cuda/sep_detection.hpp"

namespace imflow::cuda {
namespace {

constexpr int kThreads = 256;

// Where the background and the noise come from (kernels::SepDetection, with the scalars read
// from the device results).
struct SepArithmetic {
  const float* back = nullptr;  // the mesh map, or null:
  bool subtract_level = false;  //   float(results->median), or nothing
  const float* rms = nullptr;   // the RMS map, or null: float(results->std)
  float nsigma = 0.0f;
};

__device__ __forceinline__ float back_at(const SepArithmetic& a, const DeviceResults* r, int64_t i) {
  return a.back != nullptr ? a.back[i] : a.subtract_level ? static_cast<float>(r->median) : 0.0f;
}

__device__ __forceinline__ float limit_at(const SepArithmetic& a, const DeviceResults* r, int64_t i) {
  return a.rms != nullptr ? a.nsigma * a.rms[i] : a.nsigma * static_cast<float>(r->std);
}

__global__ void __launch_bounds__(kThreads)
    sep_mask_kernel(const float* __restrict__ image, int64_t n, SepArithmetic a, double threshold_nsigma,
                    bool threshold_level, uint8_t* __restrict__ mask, DeviceResults* results) {
  using BlockReduce = cub::BlockReduce<unsigned long long, kThreads>;
  __shared__ typename BlockReduce::TempStorage storage;
  unsigned long long count = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const float p = image[i];
    const float value = p - back_at(a, results, i);
    const bool on = isfinite(p) && value > limit_at(a, results, i);
    mask[i] = on ? 1 : 0;
    count += on;
  }
  count = BlockReduce(storage).Sum(count);
  if (threadIdx.x == 0 && count != 0) atomicAdd(reinterpret_cast<unsigned long long*>(&results->mask_pixels), count);
  if (blockIdx.x == 0 && threadIdx.x == 0)
    results->threshold = (threshold_level ? results->median : 0.0) + threshold_nsigma * results->std;
}

__global__ void __launch_bounds__(kThreads)
    sep_values_kernel(const float* __restrict__ image, int64_t n, SepArithmetic a, const DeviceResults* results,
                      float* __restrict__ values, float* __restrict__ thresholds, double* threshold) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    values[i] = image[i] - back_at(a, results, i);
    if (a.rms != nullptr && thresholds != nullptr) thresholds[i] = a.nsigma * a.rms[i];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0)
    *threshold = static_cast<double>(a.nsigma * static_cast<float>(results->std));
}

SepArithmetic arithmetic_of(const GpuContext& gpu, const SegmentThreshold& how) {
  if (!gpu.has_background) throw std::logic_error("cuda::segment_sep: the background step has not run on the GPU");
  if (how.rms_map && !gpu.has_background_maps)
    throw std::runtime_error("segment: relative_to: rms_map needs the background step's method: mesh");
  SepArithmetic a;
  a.nsigma = static_cast<float>(how.nsigma);
  if (how.subtract_background) {
    if (gpu.has_background_maps) a.back = gpu.mesh_background->back_map.data();
    else a.subtract_level = true;
  }
  if (how.rms_map) a.rms = gpu.mesh_background->rms_map.data();
  return a;
}

}  // namespace

void segment_sep(GpuContext& gpu, const SegmentThreshold& how) {
  const SepArithmetic a = arithmetic_of(gpu, how);
  DeviceGuard guard(gpu.device);
  const int64_t n = gpu.size();
  gpu.mask.reserve(static_cast<size_t>(n) + 4);
  const float* source = gpu.has_detection ? gpu.detection.data() : gpu.image.data();
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(&gpu.results.data()->mask_pixels, 0, sizeof(long long), gpu.stream));
  const int blocks = detail::blocks_for(n, kThreads, static_cast<int64_t>(gpu.sm_count) * 16);
  sep_mask_kernel<<<blocks, kThreads, 0, gpu.stream>>>(source, n, a, how.nsigma,
                                                      how.subtract_background && !gpu.has_background_maps,
                                                      gpu.mask.data(), gpu.results.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  gpu.has_threshold = true;
  gpu.has_mask = true;
}

void sep_detection_values(GpuContext& gpu, const SegmentThreshold& how, const float* source, float* values,
                          float* thresholds, double* threshold) {
  const SepArithmetic a = arithmetic_of(gpu, how);
  DeviceGuard guard(gpu.device);
  const int64_t n = gpu.size();
  const int blocks = detail::blocks_for(n, kThreads, static_cast<int64_t>(gpu.sm_count) * 16);
  sep_values_kernel<<<blocks, kThreads, 0, gpu.stream>>>(source, n, a, gpu.results.data(), values, thresholds,
                                                        threshold);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
