// sep.Background and sep.extract on the device for imflow.sep (python/src/gpu.cpp): the engine's
// GPU steps (background_mesh, segment_sep, label, deblend_objects, measure) on a caller's arrays.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/kernels/background_mesh.hpp"
#include "imflow/kernels/deblend.hpp"
#include "imflow/source.hpp"

namespace imflow::cuda {

// sep.Background's results: the full-resolution maps, globalback and globalrms.
struct SepBackgroundMaps {
  std::vector<float> back, rms;
  double globalback = 0.0, globalrms = 0.0;
};

// What sep.extract was asked, without a filter (the data is background-subtracted; masked pixels
// are 0 and their noise BIG, as SEP).
struct SepExtractRequest {
  ConstImageView data;
  const float* noise = nullptr;  // err or var map (width x height), or null
  bool noise_is_var = false;
  std::optional<double> err;     // one sigma (sep.extract's scalar err), or none: thresh is absolute
  double thresh = 0.0;
  kernels::DeblendParams params;
  double gain = 0.0;             // e-/ADU, 0 none
};

// sep.extract's objects: the catalog (kernels::measure_deblended's rows), the deblending's object
// records (thresh, cflux) and the segmentation map (1..m in SEP's catalog order).
struct SepObjects {
  Catalog catalog;
  kernels::DeblendResult deblend;
  std::vector<int32_t> segmap;
};

// One caller thread's device state: a stream and a GpuContext whose buffers are kept between
// calls. Not thread-safe: one per thread.
class SepSession {
 public:
  // Throws std::runtime_error naming "no CUDA device" when `device` does not exist.
  explicit SepSession(int device = 0);
  ~SepSession();
  SepSession(const SepSession&) = delete;
  SepSession& operator=(const SepSession&) = delete;

  // kernels::mesh_background's maps and globals of `image` (NaN: masked), computed on the device.
  SepBackgroundMaps background(ConstImageView image, const kernels::MeshParams& params);
  // sep.extract's detection (SEP's float32 arithmetic), 8-connected segments, deblending and
  // CLEAN, and measurements, all on the device.
  SepObjects extract(const SepExtractRequest& request);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace imflow::cuda
