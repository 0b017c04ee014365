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
#include "imflow/kernels/segment_sep.hpp"

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

// (back, rms, globalback, globalrms) as python/src/background.cpp's mesh_background, on the device.
nb::tuple mesh_background_gpu(const Image& image, int64_t bw, int64_t bh, int64_t fw, int64_t fh, double fthresh) {
  if (bw < 1 || bh < 1) throw std::invalid_argument("bw and bh must be >= 1");
  if (fw < 1 || fh < 1) throw std::invalid_argument("fw and fh must be >= 1");
  if (fw > kernels::kMaxMeshFilterSize || fh > kernels::kMaxMeshFilterSize)
    throw std::invalid_argument("fw and fh must be <= " + std::to_string(kernels::kMaxMeshFilterSize) +
                                " with device='cuda'");
#ifdef IMFLOW_HAVE_CUDA
  const kernels::MeshParams params{
      .mesh_width = bw, .mesh_height = bh, .filter_width = fw, .filter_height = fh, .filter_threshold = fthresh};
  cuda::SepBackgroundMaps maps;
  {
    nb::gil_scoped_release unlocked;
    maps = session().background(view_of(image), params);
  }
  const size_t h = image.shape(0), w = image.shape(1);
  return nb::make_tuple(to_numpy(std::move(maps.back), {h, w}), to_numpy(std::move(maps.rms), {h, w}),
                        static_cast<float>(maps.globalback), static_cast<float>(maps.globalrms));
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
  if (q.filter || q.labels != nullptr)
    throw std::invalid_argument("extract on the device: no filter_kernel or segmentation_map array");
#ifdef IMFLOW_HAVE_CUDA
  cuda::SepExtractRequest request;
  request.data = q.data;
  request.noise = q.noise;
  request.noise_is_var = q.noise_is_var;
  request.err = q.err;
  request.thresh = q.thresh;
  request.params = params;
  request.gain = background.gain;
  cuda::SepObjects objects = session().extract(request);
  ExtractResult result;
  result.catalog = std::move(objects.catalog);
  result.deblend = std::move(objects.deblend);
  result.segmap = std::move(objects.segmap);
  std::vector<float> thresh(result.deblend.objects.size());
  for (size_t k = 0; k < thresh.size(); ++k) thresh[k] = result.deblend.objects[k].thresh;
  result.tnpix = kernels::sep_count_above(q.data, result.segmap.data(), thresh);
  return result;
#else
  (void)params, (void)background;
  no_cuda();
#endif
}

void bind_gpu(nb::module_& module) {
  module.def("mesh_background_gpu", &mesh_background_gpu, nb::arg("image"), nb::arg("bw"), nb::arg("bh"),
             nb::arg("fw"), nb::arg("fh"), nb::arg("fthresh"),
             "mesh_background on the CUDA device (this thread's session): (back, rms, globalback, globalrms).");
  module.def("cuda_status", &cuda_status, "(built with CUDA, number of usable CUDA devices).");
}

}  // namespace imflow::python
