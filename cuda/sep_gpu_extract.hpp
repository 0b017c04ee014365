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
#include "imflow/kernels/sep_filter.hpp"
#include "imflow/source.hpp"

namespace imflow::cuda {

// sep.Background's full-resolution maps, kept on the device until asked for (SepSession::download).
struct SepDeviceMaps;

// sep.Background's results: globalback and globalrms, the maps on the device.
struct SepBackgroundMaps {
  std::shared_ptr<const SepDeviceMaps> maps;
  double globalback = 0.0, globalrms = 0.0;
};

// What sep.extract was asked (the data is background-subtracted; masked pixels are 0 and their
// noise BIG, as SEP).
struct SepExtractRequest {
  ConstImageView data;
  const float* noise = nullptr;  // err or var map (width x height), or null
  bool noise_is_var = false;
  std::optional<double> err;     // one sigma (sep.extract's scalar err), or none: thresh is absolute
  double thresh = 0.0;
  kernels::DeblendParams params;
  double gain = 0.0;             // e-/ADU, 0 none
  bool want_segmap = true;       // download the segmentation map (else SepObjects::segmap stays empty)
  const kernels::SepFilterKernel* filter = nullptr;  // SEP's filter on the detection, or none
  bool matched = false;          // filter_type 'matched': with a noise map, the S/N is thresholded
};

// sep.extract's objects: the catalog (kernels::measure_deblended's rows; with a filter, of the
// filtered image, and `raw` the unfiltered image's rows for flux and peak), the deblending's object
// records (thresh, cflux), SEP's tnpix (each object's pixels above its thresh, counted on the
// device) and the segmentation map (1..m in SEP's catalog order) when asked for.
struct SepObjects {
  Catalog catalog, raw;
  kernels::DeblendResult deblend;
  std::vector<int64_t> tnpix;
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

  // kernels::mesh_background's maps and globals of `image` (NaN: masked), computed on the device;
  // the maps stay there.
  SepBackgroundMaps background(ConstImageView image, const kernels::MeshParams& params);
  // Copies a background's map (the RMS map with rms, else the background) to `out` (width x height).
  void download(const SepDeviceMaps& maps, bool rms, float* out);
  // sep.extract's filter and detection (SEP's float32 arithmetic), 8-connected segments,
  // deblending and CLEAN, and measurements, all on the device.
  SepObjects extract(const SepExtractRequest& request);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace imflow::cuda
