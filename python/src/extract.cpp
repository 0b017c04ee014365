// sep.extract: SEP's float32 detection (through its filter when a kernel is given:
// kernels::sep_convolve, kernels::sep_matched_filter), 8-connected segments, deblending and CLEAN
// (kernels::deblend_sources) or the objects of a given segmentation map, and SEP's measurements
// (kernels::measure_deblended), as the columns of the catalog and the segmentation map;
// imflow/sep.py makes SEP's structured array. With cuda the steps run on the device (gpu.cpp).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "extract.hpp"
#include "imflow/kernels/deblend.hpp"
#include "imflow/kernels/label.hpp"
#include "imflow/kernels/measure.hpp"
#include "imflow/kernels/segment_sep.hpp"
#include "imflow/kernels/sep_filter.hpp"

namespace nb = nanobind;

namespace imflow::python {

namespace {
using Kernel = nb::ndarray<const float, nb::numpy, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Labels = nb::ndarray<const int32_t, nb::numpy, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

ExtractResult run_extract(const Request& q, const kernels::DeblendParams& params, kernels::MeasureBackground background) {
  const ConstImageView image = q.data;
  const size_t n = static_cast<size_t>(image.size());
  // The per-pixel noise sigma: err, or sqrt(var) in float32 as SEP.
  std::vector<float> sigma;
  const float* rms = q.noise;
  if (q.noise != nullptr && q.noise_is_var) {
    sigma.resize(n);
    for (size_t i = 0; i < n; ++i) sigma[i] = std::sqrt(q.noise[i]);
    rms = sigma.data();
  }
  background.rms_map = rms;
  kernels::SepDetection how;
  how.nsigma = static_cast<float>(q.thresh);
  how.rms = rms;
  how.rms_level = q.err ? static_cast<float>(*q.err) : 1.0f;
  // The detection values: the data, or SEP's filtered data.
  std::vector<float> filtered;
  ConstImageView detection = image;
  if (q.filter) {
    filtered.resize(n);
    kernels::sep_convolve(image, *q.filter, filtered.data());
    detection = {filtered.data(), image.width, image.height};
  }
  std::vector<float> values(n), thresholds(how.per_pixel() ? n : 0);
  kernels::sep_detection_values(detection, how, values.data(), thresholds.data());
  ExtractResult result;
  result.segmap.resize(n);
  if (q.labels != nullptr) {
    result.from_map = true;
    const std::vector<float> thresh = kernels::sep_mean_thresholds(q.labels, image.size(), q.nlabels,
                                                                   how.per_pixel() ? thresholds.data() : nullptr,
                                                                   how.threshold());
    std::copy(q.labels, q.labels + n, result.segmap.begin());
    result.catalog = kernels::measure_sources(detection, q.labels, q.nlabels, background);
    for (int32_t k = 0; k < q.nlabels; ++k) {
      kernels::DeblendObject o;
      o.thresh = thresh[static_cast<size_t>(k)];
      o.npix = result.catalog[static_cast<size_t>(k)].npix;
      o.flux = static_cast<float>(result.catalog[static_cast<size_t>(k)].flux);
      result.deblend.objects.push_back(o);
    }
  } else {
    std::vector<uint8_t> mask(n);
    if (q.filter && q.matched && q.noise != nullptr) {  // SEP: the matched filter's S/N > thresh
      std::vector<float> snr(n);
      kernels::sep_matched_filter(image, q.noise,
                                  q.noise_is_var ? kernels::SepNoiseKind::variance : kernels::SepNoiseKind::stddev,
                                  *q.filter, snr.data());
      kernels::SepDetection by_snr;
      by_snr.nsigma = how.nsigma;
      by_snr.rms_level = 1.0f;
      kernels::sep_threshold_mask({snr.data(), image.width, image.height}, by_snr, mask.data());
    } else {
      kernels::sep_threshold_mask(detection, how, mask.data());
    }
    std::vector<int32_t> segments(n);
    const int32_t nsegments =
        kernels::label_components({mask.data(), image.width, image.height}, 8, segments.data(), true);
    kernels::DeblendInput input;
    input.detection = {values.data(), image.width, image.height};
    input.measurement = q.filter ? image.data : nullptr;
    input.threshold_map = how.per_pixel() ? thresholds.data() : nullptr;
    input.threshold = how.threshold();
    input.labels = segments.data();
    input.nlabels = nsegments;
    result.deblend = kernels::deblend_sources(input, params, result.segmap.data());
    result.catalog = kernels::measure_deblended(detection, result.segmap.data(),
                                                static_cast<int32_t>(result.deblend.objects.size()), result.deblend,
                                                background);
  }
  const int32_t nobjects = static_cast<int32_t>(result.deblend.objects.size());
  if (q.filter) result.raw = kernels::measure_sources(image, result.segmap.data(), nobjects, background);
  std::vector<float> thresh(result.deblend.objects.size());
  for (size_t k = 0; k < thresh.size(); ++k) thresh[k] = result.deblend.objects[k].thresh;
  result.tnpix = kernels::sep_count_above(image, result.segmap.data(), thresh);
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
  c["cpeak"] = column<double>(r, [](const Source& s, const O&) { return s.peak; });
  c["xcpeak"] = column<int64_t>(r, [](const Source& s, const O&) { return s.peak_x; });
  c["ycpeak"] = column<int64_t>(r, [](const Source& s, const O&) { return s.peak_y; });
  // The unfiltered values' flux and peak (the detection values' without a filter).
  const Catalog& raw = r.raw.empty() ? r.catalog : r.raw;
  auto raw_column = [&](auto get) {
    std::vector<double> values(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) values[i] = get(raw[i]);
    return values;
  };
  c["flux"] = nb::cast(to_numpy(raw_column([](const Source& s) { return s.flux_iso; }), {raw.size()}));
  c["peak"] = nb::cast(to_numpy(raw_column([](const Source& s) { return s.peak; }), {raw.size()}));
  std::vector<int64_t> xpeak(raw.size()), ypeak(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    xpeak[i] = raw[i].peak_x;
    ypeak[i] = raw[i].peak_y;
  }
  c["xpeak"] = nb::cast(to_numpy(std::move(xpeak), {raw.size()}));
  c["ypeak"] = nb::cast(to_numpy(std::move(ypeak), {raw.size()}));
  c["tnpix"] = nb::cast(to_numpy(std::move(r.tnpix), {raw.size()}));
  // SEP's flag: 1 (OBJ_MERGED) for a deblended object, 2 (OBJ_TRUNC) at the image edge, 8
  // (OBJ_SINGU) for singular moments; 1 and 2 not for the objects of a given map.
  const bool from_map = r.from_map;
  c["flag"] = column<int16_t>(r, [from_map](const Source& s, const O&) {
    const int singular = (s.flags & kFlagSingular) ? 8 : 0;
    return from_map ? singular : ((s.flags & kFlagDeblended) ? 1 : 0) | ((s.flags & kFlagEdge) ? 2 : 0) | singular;
  });
  c["segmap"] = r.segmap.empty() && height * width > 0 ? nb::none()
                                                        : nb::cast(to_numpy(std::move(r.segmap), {height, width}));
  return c;
}

nb::dict extract(const Image& data, double thresh, std::optional<Image> noise_map, bool noise_is_var,
                 std::optional<double> err, double gain, int minarea, int deblend_nthresh, double deblend_cont,
                 bool clean, double clean_param, std::optional<Kernel> kernel, bool matched,
                 std::optional<Labels> segmap, int32_t nsegmap, bool cuda, bool want_segmap) {
  auto same_shape = [&](size_t h, size_t w, const char* what) {
    if (h != data.shape(0) || w != data.shape(1))
      throw std::invalid_argument(std::string(what) + ": the array's shape differs from data's");
  };
  Request q;
  q.data = view_of(data);
  q.want_segmap = want_segmap;
  if (noise_map) {
    same_shape(noise_map->shape(0), noise_map->shape(1), "err");
    q.noise = noise_map->data();
    q.noise_is_var = noise_is_var;
  }
  q.err = err;
  q.thresh = thresh;
  if (kernel)
    q.filter = kernels::sep_filter_kernel({kernel->data(), static_cast<int64_t>(kernel->shape(1)),
                                           static_cast<int64_t>(kernel->shape(0))});
  q.matched = matched;
  if (segmap) {
    same_shape(segmap->shape(0), segmap->shape(1), "segmentation_map");
    q.labels = segmap->data();
    q.nlabels = nsegmap;
  }
  const kernels::DeblendParams params{.nthresh = deblend_nthresh, .mincont = deblend_cont, .clean = clean,
                                      .clean_param = clean_param, .minarea = minarea};
  kernels::MeasureBackground background;  // data is already background-subtracted, as sep.extract's
  background.rms = err ? *err : 0.0;      // SEP: zero errors without err
  background.gain = gain;
  ExtractResult result;
  {
    nb::gil_scoped_release unlocked;
    result = cuda ? run_extract_gpu(q, params, background) : run_extract(q, params, background);
  }
  return columns(result, data.shape(0), data.shape(1));
}
}  // namespace

void bind_extract(nb::module_& module) {
  module.def("extract", &extract, nb::arg("data"), nb::arg("thresh"), nb::arg("noise_map").none(),
             nb::arg("noise_is_var"), nb::arg("err").none(), nb::arg("gain"), nb::arg("minarea"),
             nb::arg("deblend_nthresh"), nb::arg("deblend_cont"), nb::arg("clean"), nb::arg("clean_param"),
             nb::arg("kernel").none(), nb::arg("matched"), nb::arg("segmap").none(), nb::arg("nsegmap"),
             nb::arg("cuda") = false, nb::arg("want_segmap") = true,
             "sep.extract on float32 data (masked pixels 0, their noise BIG, as SEP): a dict of catalog columns "
             "and 'segmap' (None on the device unless want_segmap); cuda: on the device (no kernel or segmap).");
}

}  // namespace imflow::python
