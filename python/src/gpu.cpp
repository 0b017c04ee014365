// imflow.sep's device="cuda": sep.Background and sep.extract through cuda::SepSession (the engine's
// GPU steps), one session per calling thread, and the module's CUDA status for imflow.set_device.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "extract.hpp"
#include "imflow/kernels/background_mesh.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/device.hpp"
#include "cuda/sep_gpu_extract.hpp"
#endif

namespace nb = nanobind;

namespace imflow::python {

namespace {
#ifdef IMFLOW_HAVE_CUDA
// This thread's session (its stream and device buffers are reused by the thread's next calls;
// two threads never share one).
cuda::SepSession& session() {
  thread_local std::unique_ptr<cuda::SepSession> mine;
  if (!mine) mine = std::make_unique<cuda::SepSession>(0);
  return *mine;
}
#else
[[noreturn]] void no_cuda() {
  throw std::runtime_error("imflow: this module was built without CUDA (no CUDA device support); use device='cpu'");
}
#endif

#ifdef IMFLOW_HAVE_CUDA
// sep.Background's maps on the device: Python's Background downloads one when asked (back(), rms()).
struct DeviceBackground {
  cuda::SepBackgroundMaps maps;
  size_t height = 0, width = 0;

  nb::ndarray<nb::numpy, float> download(bool rms) const {
    std::unique_ptr<float[]> out(new float[height * width]);  // left uninitialised: the copy's threads touch it first
    {
      nb::gil_scoped_release unlocked;
      session().download(*maps.maps, rms, out.get());
    }
    return to_numpy(std::move(out), {height, width});
  }
};
#else
struct DeviceBackground {};
#endif

// (maps on the device, globalback, globalrms) as python/src/background.cpp's mesh_background, on the device.
nb::tuple mesh_background_gpu(const Image& image, int64_t bw, int64_t bh, int64_t fw, int64_t fh, double fthresh) {
  if (bw < 1 || bh < 1) throw std::invalid_argument("bw and bh must be >= 1");
  if (fw < 1 || fh < 1) throw std::invalid_argument("fw and fh must be >= 1");
  if (fw > kernels::kMaxMeshFilterSize || fh > kernels::kMaxMeshFilterSize)
    throw std::invalid_argument("fw and fh must be <= " + std::to_string(kernels::kMaxMeshFilterSize) +
                                " with device='cuda'");
#ifdef IMFLOW_HAVE_CUDA
  const kernels::MeshParams params{
      .mesh_width = bw, .mesh_height = bh, .filter_width = fw, .filter_height = fh, .filter_threshold = fthresh};
  DeviceBackground result;
  result.height = image.shape(0);
  result.width = image.shape(1);
  {
    nb::gil_scoped_release unlocked;
    result.maps = session().background(view_of(image), params);
  }
  const float globalback = static_cast<float>(result.maps.globalback), globalrms = static_cast<float>(result.maps.globalrms);
  return nb::make_tuple(nb::cast(std::move(result)), globalback, globalrms);
#else
  (void)image, (void)fthresh;
  no_cuda();
#endif
}

// (built with CUDA, number of usable devices).
nb::tuple cuda_status() {
#ifdef IMFLOW_HAVE_CUDA
  return nb::make_tuple(true, cuda::device_count());
#else
  return nb::make_tuple(false, 0);
#endif
}
}  // namespace

ExtractResult run_extract_gpu(const Request& q, const kernels::DeblendParams& params,
                              const kernels::MeasureBackground& background) {
  if (q.labels != nullptr) throw std::invalid_argument("extract on the device: no segmentation_map array");
#ifdef IMFLOW_HAVE_CUDA
  cuda::SepExtractRequest request;
  request.data = q.data;
  request.noise = q.noise;
  request.noise_is_var = q.noise_is_var;
  request.err = q.err;
  request.thresh = q.thresh;
  request.params = params;
  request.gain = background.gain;
  request.want_segmap = q.want_segmap;
  request.filter = q.filter ? &*q.filter : nullptr;
  request.matched = q.matched;
  cuda::SepObjects objects = session().extract(request);
  ExtractResult result;
  result.catalog = std::move(objects.catalog);
  result.raw = std::move(objects.raw);
  result.deblend = std::move(objects.deblend);
  result.tnpix = std::move(objects.tnpix);
  result.segmap = std::move(objects.segmap);
  return result;
#else
  (void)params, (void)background;
  no_cuda();
#endif
}

void bind_gpu(nb::module_& module) {
  nb::class_<DeviceBackground> device_background(module, "DeviceBackground",
                                                 "sep.Background's maps kept on the CUDA device.");
#ifdef IMFLOW_HAVE_CUDA
  device_background.def("back", [](const DeviceBackground& b) { return b.download(false); },
                        "The background map, downloaded (float32).");
  device_background.def("rms", [](const DeviceBackground& b) { return b.download(true); },
                        "The background RMS map, downloaded (float32).");
#endif
  module.def("mesh_background_gpu", &mesh_background_gpu, nb::arg("image"), nb::arg("bw"), nb::arg("bh"),
             nb::arg("fw"), nb::arg("fh"), nb::arg("fthresh"),
             "mesh_background on the CUDA device (this thread's session): (maps on the device, globalback, globalrms).");
  module.def("cuda_status", &cuda_status, "(built with CUDA, number of usable CUDA devices).");
}

}  // namespace imflow::python
