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
#include "cuda/sep_gpu_extract.hpp"
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

struct SepSession::State {
  explicit State(int device) : stream(stream_on(device)), gpu(device, stream.get()) {}
  Stream stream;
  GpuContext gpu;

  void upload(ConstImageView image) {
    prepare_item(gpu, image.width, image.height);
    const size_t n = static_cast<size_t>(gpu.size());
    if (n > 0)
      IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.image.data(), image.data, n * sizeof(float), cudaMemcpyHostToDevice,
                                        gpu.stream));
  }

  template <typename T>
  void download(std::vector<T>& out, const T* device) {
    out.resize(static_cast<size_t>(gpu.size()));
    if (!out.empty())
      IMFLOW_CUDA_CHECK(
          cudaMemcpyAsync(out.data(), device, out.size() * sizeof(T), cudaMemcpyDeviceToHost, gpu.stream));
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
      IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.image_spare.data(), q.noise, n * sizeof(float), cudaMemcpyHostToDevice,
                                        gpu.stream));
      const int64_t count = static_cast<int64_t>(n);
      const int blocks = detail::blocks_for(count, kThreads, static_cast<int64_t>(gpu.sm_count) * 16);
      sqrt_kernel<<<blocks, kThreads, 0, gpu.stream>>>(gpu.image_spare.data(), count, maps.rms_map.data());
      IMFLOW_CUDA_CHECK_LAUNCH();
    } else {
      IMFLOW_CUDA_CHECK(cudaMemcpyAsync(maps.rms_map.data(), q.noise, n * sizeof(float), cudaMemcpyHostToDevice,
                                        gpu.stream));
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
  SepBackgroundMaps out;
  state_->download(out.back, gpu.mesh_background->back_map.data());
  state_->download(out.rms, gpu.mesh_background->rms_map.data());
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.results_host.data(), gpu.results.data(), sizeof(DeviceResults),
                                    cudaMemcpyDeviceToHost, gpu.stream));
  IMFLOW_CUDA_CHECK(cudaStreamSynchronize(gpu.stream));
  out.globalback = gpu.results_host.data()->median;
  out.globalrms = gpu.results_host.data()->std;
  return out;
}

SepObjects SepSession::extract(const SepExtractRequest& q) {
  GpuContext& gpu = state_->gpu;
  DeviceGuard guard(gpu.device);
  state_->upload(q.data);
  // The "background" the steps read: level 0 (median), the noise err (or 1: thresh is absolute),
  // or the per-pixel maps; segment_sep then compares float32 pixel > float32(thresh) x noise, as
  // kernels::sep_threshold_mask does for python/src/extract.cpp.
  set_result(gpu, offsetof(DeviceResults, std), q.err ? *q.err : 1.0);
  if (q.noise != nullptr) state_->noise_maps(q);
  gpu.has_background = true;
  SegmentThreshold how;
  how.nsigma = q.thresh;
  how.subtract_background = false;
  how.rms_map = q.noise != nullptr;
  how.float32 = true;
  segment_sep(gpu, how);
  label(gpu, 8);
  deblend_objects(gpu, how, q.params);
  // The measurements' noise: err, or none (SEP's zero errors without err) unless a map.
  if (!q.err) set_result(gpu, offsetof(DeviceResults, std), 0.0);
  measure(gpu, q.gain);
  enqueue_download(gpu, DownloadWants{});
  SepObjects out;
  state_->download(out.segmap, gpu.labels.data());
  IMFLOW_CUDA_CHECK(cudaStreamSynchronize(gpu.stream));
  remeasure_if_overflowed(gpu);  // more objects than the device catalog held: grown, measured again
  const DeviceResults& r = *gpu.results_host.data();
  out.catalog.assign(gpu.catalog_host.data(), gpu.catalog_host.data() + r.nlabels);
  out.deblend = gpu.deblend->workspace.result();
  return out;
}

}  // namespace imflow::cuda
