// sep.extract without a filter: SEP's float32 detection, 8-connected segments, deblending and
// CLEAN (kernels::deblend_sources) and SEP's measurements (kernels::measure_deblended), as the
// columns of the catalog and the segmentation map; imflow/sep.py makes SEP's structured array.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "imflow/kernels/deblend.hpp"
#include "imflow/kernels/label.hpp"
#include "imflow/kernels/measure.hpp"
#include "imflow/kernels/segment_sep.hpp"

namespace nb = nanobind;

namespace imflow::python {

namespace {
struct ExtractResult {
  Catalog catalog;
  kernels::DeblendResult deblend;
  std::vector<int32_t> segmap;
};

// The detection threshold: thresh x err per pixel (err_map), thresh x err (err), or thresh.
kernels::SepDetection detection_of(double thresh, const float* err_map, std::optional<double> err) {
  kernels::SepDetection how;
  how.nsigma = static_cast<float>(thresh);
  how.rms = err_map;
  how.rms_level = err ? static_cast<float>(*err) : 1.0f;
  return how;
}

ExtractResult run_extract(ConstImageView image, const kernels::SepDetection& how, const kernels::DeblendParams& params,
                          const kernels::MeasureBackground& background) {
  const size_t n = static_cast<size_t>(image.size());
  std::vector<uint8_t> mask(n);
  kernels::sep_threshold_mask(image, how, mask.data());
  std::vector<int32_t> segments(n);
  const int32_t nsegments =
      kernels::label_components({mask.data(), image.width, image.height}, 8, segments.data(), true);
  std::vector<float> values(n), thresholds(how.per_pixel() ? n : 0);
  kernels::sep_detection_values(image, how, values.data(), thresholds.data());
  kernels::DeblendInput input;
  input.detection = {values.data(), image.width, image.height};
  input.threshold_map = how.per_pixel() ? thresholds.data() : nullptr;
  input.threshold = how.threshold();
  input.labels = segments.data();
  input.nlabels = nsegments;
  ExtractResult result;
  result.segmap.resize(n);
  result.deblend = kernels::deblend_sources(input, params, result.segmap.data());
  result.catalog = kernels::measure_deblended(image, result.segmap.data(),
                                              static_cast<int32_t>(result.deblend.objects.size()), result.deblend,
                                              background);
  return result;
}

// One column of the catalog.
template <typename T, typename Get>
nb::object column(const ExtractResult& r, Get get) {
  std::vector<T> values(r.catalog.size());
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(get(r.catalog[i], r.deblend.objects[i]));
  return nb::cast(to_numpy(std::move(values), {r.catalog.size()}));
}

nb::dict columns(ExtractResult& r, size_t height, size_t width) {
  using O = kernels::DeblendObject;
  nb::dict c;
  c["thresh"] = column<double>(r, [](const Source&, const O& o) { return o.thresh; });
  c["npix"] = column<int64_t>(r, [](const Source& s, const O&) { return s.npix; });
  c["xmin"] = column<int64_t>(r, [](const Source& s, const O&) { return s.xmin; });
  c["xmax"] = column<int64_t>(r, [](const Source& s, const O&) { return s.xmax; });
  c["ymin"] = column<int64_t>(r, [](const Source& s, const O&) { return s.ymin; });
  c["ymax"] = column<int64_t>(r, [](const Source& s, const O&) { return s.ymax; });
  c["x"] = column<double>(r, [](const Source& s, const O&) { return s.x; });
  c["y"] = column<double>(r, [](const Source& s, const O&) { return s.y; });
  c["x2"] = column<double>(r, [](const Source& s, const O&) { return s.x2; });
  c["y2"] = column<double>(r, [](const Source& s, const O&) { return s.y2; });
  c["xy"] = column<double>(r, [](const Source& s, const O&) { return s.xy; });
  c["errx2"] = column<double>(r, [](const Source& s, const O&) { return s.errx2; });
  c["erry2"] = column<double>(r, [](const Source& s, const O&) { return s.erry2; });
  c["errxy"] = column<double>(r, [](const Source& s, const O&) { return s.errxy; });
  c["a"] = column<double>(r, [](const Source& s, const O&) { return s.a; });
  c["b"] = column<double>(r, [](const Source& s, const O&) { return s.b; });
  c["theta"] = column<double>(r, [](const Source& s, const O&) { return s.theta; });
  c["cxx"] = column<double>(r, [](const Source& s, const O&) { return s.cxx; });
  c["cyy"] = column<double>(r, [](const Source& s, const O&) { return s.cyy; });
  c["cxy"] = column<double>(r, [](const Source& s, const O&) { return s.cxy; });
  c["cflux"] = column<double>(r, [](const Source&, const O& o) { return o.flux; });
  c["flux"] = column<double>(r, [](const Source& s, const O&) { return s.flux_iso; });
  c["peak"] = column<double>(r, [](const Source& s, const O&) { return s.peak; });
  c["xpeak"] = column<int64_t>(r, [](const Source& s, const O&) { return s.peak_x; });
  c["ypeak"] = column<int64_t>(r, [](const Source& s, const O&) { return s.peak_y; });
  // SEP's flag: 1 (OBJ_MERGED) for a deblended object, 2 (OBJ_TRUNC) at the image edge.
  c["flag"] = column<int16_t>(r, [](const Source& s, const O&) {
    return ((s.flags & kFlagDeblended) ? 1 : 0) | ((s.flags & kFlagEdge) ? 2 : 0);
  });
  c["segmap"] = nb::cast(to_numpy(std::move(r.segmap), {height, width}));
  return c;
}

nb::dict extract(const Image& data, double thresh, std::optional<Image> err_map, std::optional<double> err,
                 double gain, int minarea, int deblend_nthresh, double deblend_cont, bool clean, double clean_param) {
  if (err_map && (err_map->shape(0) != data.shape(0) || err_map->shape(1) != data.shape(1)))
    throw std::invalid_argument("err: the array's shape differs from data's");
  const kernels::SepDetection how = detection_of(thresh, err_map ? err_map->data() : nullptr, err);
  const kernels::DeblendParams params{.nthresh = deblend_nthresh, .mincont = deblend_cont, .clean = clean,
                                      .clean_param = clean_param, .minarea = minarea};
  kernels::MeasureBackground background;  // data is already background-subtracted, as sep.extract's
  background.rms_map = err_map ? err_map->data() : nullptr;
  background.rms = err ? *err : 0.0;  // SEP: zero errors without err
  background.gain = gain;
  ExtractResult result;
  {
    nb::gil_scoped_release unlocked;
    result = run_extract(view_of(data), how, params, background);
  }
  return columns(result, data.shape(0), data.shape(1));
}
}  // namespace

void bind_extract(nb::module_& module) {
  module.def("extract", &extract, nb::arg("data"), nb::arg("thresh"), nb::arg("err_map").none(), nb::arg("err").none(),
             nb::arg("gain"), nb::arg("minarea"), nb::arg("deblend_nthresh"), nb::arg("deblend_cont"), nb::arg("clean"),
             nb::arg("clean_param"),
             "sep.extract without a filter on float32 data (NaN: masked): a dict of catalog columns and 'segmap'.");
}

}  // namespace imflow::python
