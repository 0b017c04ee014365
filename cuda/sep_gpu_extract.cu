// imflow.sep's device path (cuda/sep_gpu_extract.hpp): the engine's GPU steps run in the order of the
// pipeline background -> segment (float32) -> label (8) -> deblend -> measure on one GpuContext.
#include <cstddef>
#include <stdexcept>
#include <string>

#include "cuda/background_mesh.hpp"
#include "cuda/deblend_objects.hpp"
#include "cuda/device.hpp"
#include "cuda/device_common.cuh"
#include "cuda/gpu_context.hpp"
#include "cuda/label.hpp"
#include "cuda/measure.hpp"
#include "cuda/sep_detection.hpp"
#include "cuda/sep_filter.hpp"
#include "cuda/sep_gpu_extract.hpp"
#include "cuda/staged_copy.hpp"
#include "cuda/stream.hpp"

namespace imflow::cuda {

namespace {
constexpr int kThreads = 256;

// SEP's noise from a variance map: sqrt in float32 (correctly rounded, as std::sqrt on the host).
__global__ void sqrt_kernel(const float* __restrict__ in, int64_t n, float* __restrict__ out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads)
    out[i] = sqrtf(in[i]);
}

// SEP's tnpix: per object (label l > 0 of the map) its pixels whose value is above its thresh.
__global__ void count_above_kernel(const float* __restrict__ values, const int32_t* __restrict__ labels, int64_t n,
                                   const float* __restrict__ thresh, unsigned long long* __restrict__ counts) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int32_t l = labels[i];
    if (l > 0 && values[i] > thresh[l - 1]) atomicAdd(&counts[l - 1], 1ull);
  }
}

void set_result(GpuContext& gpu, size_t offset, double value) {
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(reinterpret_cast<char*>(gpu.results.data()) + offset, &value, sizeof(double),
                                    cudaMemcpyHostToDevice, gpu.stream));
}

int checked_device(int device) {
  const int count = device_count();
  if (count == 0) throw std::runtime_error("imflow: no CUDA device (device='cuda'); use device='cpu'");
  if (device < 0 || device >= count)
    throw std::runtime_error("imflow: no CUDA device " + std::to_string(device) + " (" + std::to_string(count) +
                             " found)");
  return device;
}

// A stream created on `device` (the context, declared after it, is destroyed first).
Stream stream_on(int device) {
  DeviceGuard guard(device);
  return Stream();
}
}  // namespace

struct SepDeviceMaps {
  int device = 0;
  size_t pixels = 0;
  DeviceBuffer<float> back, rms;
};

namespace {
// A staging area made with `device` current.
StagedCopy staging_on(int device) {
  DeviceGuard guard(device);
  return StagedCopy();
}
}  // namespace

struct SepSession::State {
  explicit State(int device) : stream(stream_on(device)), gpu(device, stream.get()), staging(staging_on(device)) {}
  Stream stream;
  GpuContext gpu;
  StagedCopy staging;
  DeviceBuffer<float> object_thresh, filter_values, snr;
  DeviceBuffer<unsigned long long> counts;

  void upload(ConstImageView image) {
    prepare_item(gpu, image.width, image.height);
    staging.upload(gpu.image.data(), image.data, static_cast<size_t>(gpu.size()) * sizeof(float), gpu.stream);
  }

  // SEP's filter: gpu.detection = the convolved data; with 'matched' and a noise map, `snr` = the
  // matched filter's S/N, which sep.extract thresholds instead. Returns whether `snr` was made.
  bool filter(const SepExtractRequest& q) {
    const kernels::SepFilterKernel& k = *q.filter;
    filter_values.reserve(k.values.size());
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(filter_values.data(), k.values.data(), k.values.size() * sizeof(float),
                                      cudaMemcpyHostToDevice, gpu.stream));
    const SepFilterView view{filter_values.data(), k.width, k.height};
    const size_t n = static_cast<size_t>(gpu.size());
    gpu.detection.reserve(n + 1);
    sep_convolve(gpu.image.data(), gpu.width, gpu.height, view, gpu.detection.data(), gpu.stream);
    gpu.has_detection = true;
    if (!q.matched || q.noise == nullptr) return false;
    // The noise as given: the variance (uploaded into image_spare by noise_maps) or the err map.
    const float* noise = q.noise_is_var ? gpu.image_spare.data() : gpu.mesh_background->rms_map.data();
    snr.reserve(n + 1);
    sep_matched_filter(gpu.image.data(), noise, q.noise_is_var, gpu.width, gpu.height, view, snr.data(), gpu.stream);
    return true;
  }

  // gpu's catalog rows after measure (grown and measured again when they overflowed).
  Catalog measured(double gain) {
    measure(gpu, gain);
    enqueue_download(gpu, DownloadWants{});
    IMFLOW_CUDA_CHECK(cudaStreamSynchronize(gpu.stream));
    remeasure_if_overflowed(gpu);  // more objects than the device catalog held: grown, measured again
    const DeviceResults& r = *gpu.results_host.data();
    return Catalog(gpu.catalog_host.data(), gpu.catalog_host.data() + r.nlabels);
  }

  // SEP's tnpix of the objects in gpu.labels (after the stream's work), from their thresh.
  std::vector<int64_t> count_above(const kernels::DeblendResult& result) {
    const size_t m = result.objects.size();
    std::vector<int64_t> tnpix(m, 0);
    if (m == 0) return tnpix;
    std::vector<float> thresh(m);
    for (size_t k = 0; k < m; ++k) thresh[k] = result.objects[k].thresh;
    object_thresh.reserve(m);
    counts.reserve(m);
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(object_thresh.data(), thresh.data(), m * sizeof(float), cudaMemcpyHostToDevice,
                                      gpu.stream));
    IMFLOW_CUDA_CHECK(cudaMemsetAsync(counts.data(), 0, m * sizeof(unsigned long long), gpu.stream));
    const int64_t n = gpu.size();
    const int blocks = detail::blocks_for(n, kThreads, static_cast<int64_t>(gpu.sm_count) * 16);
    count_above_kernel<<<blocks, kThreads, 0, gpu.stream>>>(gpu.image.data(), gpu.labels.data(), n,
                                                            object_thresh.data(), counts.data());
    IMFLOW_CUDA_CHECK_LAUNCH();
    static_assert(sizeof(unsigned long long) == sizeof(int64_t));
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(tnpix.data(), counts.data(), m * sizeof(int64_t), cudaMemcpyDeviceToHost,
                                      gpu.stream));
    IMFLOW_CUDA_CHECK(cudaStreamSynchronize(gpu.stream));
    return tnpix;
  }

  // The noise of sep.extract as the "mesh maps" segment_sep and measure read: rms_map = err or
  // sqrt(var), back_map = 0 (the data is background-subtracted).
  void noise_maps(const SepExtractRequest& q) {
    const size_t n = static_cast<size_t>(gpu.size());
    if (!gpu.mesh_background) gpu.mesh_background = std::make_shared<MeshBackgroundState>();
    MeshBackgroundState& maps = *gpu.mesh_background;
    maps.back_map.reserve(n + 1);
    maps.rms_map.reserve(n + 1);
    maps.nx = maps.ny = 0;
    IMFLOW_CUDA_CHECK(cudaMemsetAsync(maps.back_map.data(), 0, n * sizeof(float), gpu.stream));
    if (q.noise_is_var) {
      gpu.image_spare.reserve(n + 1);
      staging.upload(gpu.image_spare.data(), q.noise, n * sizeof(float), gpu.stream);
      const int64_t count = static_cast<int64_t>(n);
      const int blocks = detail::blocks_for(count, kThreads, static_cast<int64_t>(gpu.sm_count) * 16);
      sqrt_kernel<<<blocks, kThreads, 0, gpu.stream>>>(gpu.image_spare.data(), count, maps.rms_map.data());
      IMFLOW_CUDA_CHECK_LAUNCH();
    } else {
      staging.upload(maps.rms_map.data(), q.noise, n * sizeof(float), gpu.stream);
    }
    gpu.has_background_maps = true;
  }
};

SepSession::SepSession(int device) : state_(std::make_unique<State>(checked_device(device))) {}
SepSession::~SepSession() = default;

SepBackgroundMaps SepSession::background(ConstImageView image, const kernels::MeshParams& params) {
  GpuContext& gpu = state_->gpu;
  DeviceGuard guard(gpu.device);
  state_->upload(image);
  background_mesh(gpu, params);
  // The maps move to buffers of their own (the session's are the next call's).
  auto maps = std::make_shared<SepDeviceMaps>();
  maps->device = gpu.device;
  maps->pixels = static_cast<size_t>(gpu.size());
  maps->back.reserve(maps->pixels + 1);
  maps->rms.reserve(maps->pixels + 1);
  const size_t bytes = maps->pixels * sizeof(float);
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(maps->back.data(), gpu.mesh_background->back_map.data(), bytes,
                                    cudaMemcpyDeviceToDevice, gpu.stream));
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(maps->rms.data(), gpu.mesh_background->rms_map.data(), bytes,
                                    cudaMemcpyDeviceToDevice, gpu.stream));
  SepBackgroundMaps out;
  out.maps = std::move(maps);
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.results_host.data(), gpu.results.data(), sizeof(DeviceResults),
                                    cudaMemcpyDeviceToHost, gpu.stream));
  IMFLOW_CUDA_CHECK(cudaStreamSynchronize(gpu.stream));
  out.globalback = gpu.results_host.data()->median;
  out.globalrms = gpu.results_host.data()->std;
  return out;
}

void SepSession::download(const SepDeviceMaps& maps, bool rms, float* out) {
  GpuContext& gpu = state_->gpu;
  DeviceGuard guard(gpu.device);
  state_->staging.download(out, (rms ? maps.rms : maps.back).data(), maps.pixels * sizeof(float), gpu.stream);
}

SepObjects SepSession::extract(const SepExtractRequest& q) {
  State& state = *state_;
  GpuContext& gpu = state.gpu;
  DeviceGuard guard(gpu.device);
  state.upload(q.data);
  // The "background" the steps read: level 0 (median), the noise err (or 1: thresh is absolute),
  // or the per-pixel maps; segment_sep then compares float32 pixel > float32(thresh) x noise, as
  // kernels::sep_threshold_mask does for python/src/extract.cpp.
  set_result(gpu, offsetof(DeviceResults, std), q.err ? *q.err : 1.0);
  if (q.noise != nullptr) state.noise_maps(q);
  gpu.has_background = true;
  SegmentThreshold how;
  how.nsigma = q.thresh;
  how.subtract_background = false;
  how.rms_map = q.noise != nullptr;
  how.float32 = true;
  if (q.filter != nullptr && state.filter(q)) {
    // The matched filter's S/N against float32(thresh) x 1 (the std is 1 with a noise map).
    SegmentThreshold by_snr = how;
    by_snr.rms_map = false;
    swap(gpu.detection, state.snr);
    segment_sep(gpu, by_snr);
    swap(gpu.detection, state.snr);
  } else {
    segment_sep(gpu, how);
  }
  label(gpu, 8);
  deblend_objects(gpu, how, q.params);
  // The measurements' noise: err, or none (SEP's zero errors without err) unless a map.
  if (!q.err) set_result(gpu, offsetof(DeviceResults, std), 0.0);
  SepObjects out;
  if (gpu.has_detection) {  // the catalog of the filtered image; flux and peak from the data
    swap(gpu.image, gpu.detection);
    out.catalog = state.measured(q.gain);
    swap(gpu.image, gpu.detection);
    out.raw = state.measured(q.gain);
  } else {
    out.catalog = state.measured(q.gain);
  }
  out.deblend = gpu.deblend->workspace.result();
  out.tnpix = state.count_above(out.deblend);
  if (q.want_segmap) {
    out.segmap.resize(static_cast<size_t>(gpu.size()));
    state.staging.download(out.segmap.data(), gpu.labels.data(), out.segmap.size() * sizeof(int32_t), gpu.stream);
  }
  return out;
}

}  // namespace imflow::cuda
