// sep.sum_circle, sum_circann, sum_ellipse, sum_ellipann (with bkgann), kron_radius, flux_radius
// and winpos over kernels/aperture.hpp, one call per object list: imflow/_apertures.py broadcasts
// SEP's arguments into a (n, k) float64 array of per-object parameters and reshapes the results.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "imflow/kernels/aperture.hpp"

namespace nb = nanobind;

namespace imflow::python {

namespace {
using Params = nb::ndarray<const double, nb::numpy, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Values = nb::ndarray<const double, nb::numpy, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// The image with its noise (err or var map or value), mask and gain; the arrays match data's shape.
kernels::ApertureImage image_of(const Image& data, const std::optional<Image>& noise, double noise_value,
                                const std::string& noise_kind, const std::optional<Image>& mask, double maskthresh,
                                double gain) {
  kernels::ApertureImage image;
  image.data = view_of(data);
  const auto same_shape = [&](const Image& other, const char* name) {
    if (other.shape(0) != data.shape(0) || other.shape(1) != data.shape(1))
      throw std::invalid_argument(std::string(name) + ": its shape differs from data's");
  };
  if (noise_kind == "err") image.noise_kind = kernels::NoiseKind::stddev;
  else if (noise_kind == "var") image.noise_kind = kernels::NoiseKind::variance;
  else if (noise_kind != "none") throw std::invalid_argument("noise_kind: none, err or var");
  if (noise) {
    same_shape(*noise, "err/var");
    image.noise = noise->data();
  }
  image.noise_value = noise_value;
  if (mask) {
    same_shape(*mask, "mask");
    image.mask = mask->data();
  }
  image.mask_threshold = maskthresh;
  image.gain = gain;
  return image;
}

// The segmentation map (float32 ids, as SEP reads it) and the objects' seg_id (one per row of params).
struct Segments {
  std::optional<Image> map;
  std::optional<Values> ids;
  void apply(const Image& data, kernels::ApertureImage& image, size_t rows) const {
    if (!map) return;
    if (map->shape(0) != data.shape(0) || map->shape(1) != data.shape(1))
      throw std::invalid_argument("segmap: its shape differs from data's");
    if (!ids || ids->shape(0) != rows) throw std::invalid_argument("seg_id: one per object with segmap");
    image.segmap = map->data();
  }
  kernels::ApertureImage of(const kernels::ApertureImage& image, size_t i) const {
    kernels::ApertureImage out = image;
    if (map) out.seg_id = ids->data()[i];
    return out;
  }
};

void check_columns(const Params& params, size_t columns) {
  if (params.shape(1) != columns) throw std::invalid_argument("params: wrong number of columns");
}

// kind: circle (x, y, r), circann (x, y, rin, rout), ellipse (x, y, a, b, theta, r), ellipann
// (x, y, a, b, theta, rin, rout), circle_bkgann (x, y, r, rin, rout), ellipse_bkgann
// (x, y, a, b, theta, r, rin, rout). Returns (sum, sumerr, flag); with bkgann, raises SEP's
// ValueError when an object's annulus has no valid pixel (an aperture's own NaN or masked pixels
// give that object NaN, as in SEP).
nb::tuple sum_apertures(const std::string& kind, const Image& data, const Params& params,
                        std::optional<Image> noise, double noise_value, const std::string& noise_kind,
                        std::optional<Image> mask, double maskthresh, double gain, int subpix, std::optional<Image> segmap,
                        std::optional<Values> seg_ids) {
  kernels::ApertureImage base = image_of(data, noise, noise_value, noise_kind, mask, maskthresh, gain);
  const Segments segments{segmap, seg_ids};
  segments.apply(data, base, params.shape(0));
  int which = 0;
  const char* kinds[] = {"circle", "circann", "ellipse", "ellipann", "circle_bkgann", "ellipse_bkgann"};
  const size_t columns[] = {3, 4, 6, 7, 5, 8};
  for (; which < 6 && kind != kinds[which]; ++which) {}
  if (which == 6) throw std::invalid_argument("kind: unknown aperture " + kind);
  check_columns(params, columns[which]);
  const size_t n = params.shape(0);
  std::vector<double> sums(n), errors(n);
  std::vector<int16_t> flags(n);
  std::optional<size_t> empty_annulus;  // the first object whose background annulus has no valid pixel (SEP raises)
  {
    nb::gil_scoped_release unlocked;
    for (size_t i = 0; i < n; ++i) {
      const double* p = params.data() + i * columns[which];
      const kernels::ApertureImage image = segments.of(base, i);
      kernels::ApertureSum s;
      switch (which) {
        case 0: s = kernels::sum_circle(image, p[0], p[1], p[2], subpix); break;
        case 1: s = kernels::sum_circann(image, p[0], p[1], p[2], p[3], subpix); break;
        case 2: s = kernels::sum_ellipse(image, p[0], p[1], p[2], p[3], p[4], p[5], subpix); break;
        case 3: s = kernels::sum_ellipann(image, p[0], p[1], p[2], p[3], p[4], p[5], p[6], subpix); break;
        case 4: s = kernels::sum_circle_bkgann(image, p[0], p[1], p[2], p[3], p[4], subpix); break;
        default: s = kernels::sum_ellipse_bkgann(image, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], subpix);
      }
      sums[i] = s.sum;
      errors[i] = s.error;
      flags[i] = static_cast<int16_t>(s.flag);
      if (which >= 4 && std::isnan(s.sum) && !empty_annulus &&
          std::all_of(p, p + columns[which], [](double v) { return std::isfinite(v); })) {  // the annulus, as the bkgann sum takes it
        const kernels::ApertureSum annulus =
            which == 4 ? kernels::sum_circann(image, p[0], p[1], p[3], p[4], 1, kernels::MaskMode::ignore)
                       : kernels::sum_ellipann(image, p[0], p[1], p[2], p[3], p[4], p[6], p[7], subpix);
        if (!(annulus.area > 0.0)) empty_annulus = i;
      }
    }
  }
  if (empty_annulus) {
    throw nb::value_error(("The background annulus does not contain any valid pixels, for the object at index " +
                           std::to_string(*empty_annulus) + ".")
                              .c_str());
  }
  return nb::make_tuple(to_numpy(std::move(sums), {n}), to_numpy(std::move(errors), {n}),
                        to_numpy(std::move(flags), {n}));
}

// params: (x, y, a, b, theta, r) per object (SEP's ellipse_coeffs of a, b, theta). Returns (kr, flag).
nb::tuple kron_radius(const Image& data, const Params& params, std::optional<Image> mask, double maskthresh,
                      std::optional<Image> segmap, std::optional<Values> seg_ids) {
  kernels::ApertureImage base = image_of(data, std::nullopt, 0.0, "none", mask, maskthresh, 0.0);
  const Segments segments{segmap, seg_ids};
  segments.apply(data, base, params.shape(0));
  check_columns(params, 6);
  const size_t n = params.shape(0);
  std::vector<double> radii(n);
  std::vector<int16_t> flags(n);
  {
    nb::gil_scoped_release unlocked;
    for (size_t i = 0; i < n; ++i) {
      const double* p = params.data() + i * 6;
      const kernels::EllipseCoeffs e = kernels::ellipse_coeffs(p[2], p[3], p[4]);
      const kernels::KronRadius k = kernels::kron_radius(segments.of(base, i), p[0], p[1], e.cxx, e.cyy, e.cxy, p[5]);
      radii[i] = k.radius;
      flags[i] = static_cast<int16_t>(k.flag);
    }
  }
  return nb::make_tuple(to_numpy(std::move(radii), {n}), to_numpy(std::move(flags), {n}));
}

// params: (x, y, rmax, normflux or NaN) per object. Returns (radius (n, len(frac)), flag).
nb::tuple flux_radius(const Image& data, const Params& params, const Values& frac, std::optional<Image> mask,
                      double maskthresh, int subpix, std::optional<Image> segmap, std::optional<Values> seg_ids) {
  kernels::ApertureImage base = image_of(data, std::nullopt, 0.0, "none", mask, maskthresh, 0.0);
  const Segments segments{segmap, seg_ids};
  segments.apply(data, base, params.shape(0));
  check_columns(params, 4);
  if (subpix < 1) throw std::invalid_argument("subpix must be >= 1");
  const size_t n = params.shape(0), nfrac = frac.shape(0);
  std::vector<double> radii(n * nfrac);
  std::vector<int16_t> flags(n);
  {
    nb::gil_scoped_release unlocked;
    const std::span<const double> fractions(frac.data(), nfrac);
    for (size_t i = 0; i < n; ++i) {
      const double* p = params.data() + i * 4;
      flags[i] = static_cast<int16_t>(kernels::flux_radius(segments.of(base, i), p[0], p[1], p[2], fractions, p[3], subpix,
                                                           std::span<double>(radii.data() + i * nfrac, nfrac)));
    }
  }
  return nb::make_tuple(to_numpy(std::move(radii), {n, nfrac}), to_numpy(std::move(flags), {n}));
}

// params: (x, y, sig) per object. Returns (xwin, ywin, flag).
nb::tuple winpos(const Image& data, const Params& params, std::optional<Image> mask, double maskthresh, int subpix,
                 double minsig) {
  const kernels::ApertureImage image = image_of(data, std::nullopt, 0.0, "none", mask, maskthresh, 0.0);
  check_columns(params, 3);
  const size_t n = params.shape(0);
  std::vector<double> xs(n), ys(n);
  std::vector<int16_t> flags(n);
  {
    nb::gil_scoped_release unlocked;
    for (size_t i = 0; i < n; ++i) {
      const double* p = params.data() + i * 3;
      const kernels::WindowedPosition w = kernels::winpos(image, p[0], p[1], p[2], subpix, minsig);
      xs[i] = w.x;
      ys[i] = w.y;
      flags[i] = static_cast<int16_t>(w.flag);
    }
  }
  return nb::make_tuple(to_numpy(std::move(xs), {n}), to_numpy(std::move(ys), {n}), to_numpy(std::move(flags), {n}));
}
}  // namespace

void bind_apertures(nb::module_& module) {
  module.def("sum_apertures", &sum_apertures, nb::arg("kind"), nb::arg("data"), nb::arg("params"),
             nb::arg("noise").none(), nb::arg("noise_value"), nb::arg("noise_kind"), nb::arg("mask").none(),
             nb::arg("maskthresh"), nb::arg("gain"), nb::arg("subpix"), nb::arg("segmap").none() = nb::none(),
             nb::arg("seg_ids").none() = nb::none(),
             "SEP's aperture sums of a float32 image, one row of params per object: (sum, sumerr, flag).");
  module.def("kron_radius", &kron_radius, nb::arg("data"), nb::arg("params"), nb::arg("mask").none(),
             nb::arg("maskthresh"), nb::arg("segmap").none() = nb::none(), nb::arg("seg_ids").none() = nb::none(),
             "sep.kron_radius, params (x, y, a, b, theta, r) per object: (kr, flag).");
  module.def("flux_radius", &flux_radius, nb::arg("data"), nb::arg("params"), nb::arg("frac"),
             nb::arg("mask").none(), nb::arg("maskthresh"), nb::arg("subpix"), nb::arg("segmap").none() = nb::none(),
             nb::arg("seg_ids").none() = nb::none(), "sep.flux_radius, params (x, y, rmax, normflux or NaN) per object: (radius, flag).");
  module.def("winpos", &winpos, nb::arg("data"), nb::arg("params"), nb::arg("mask").none(), nb::arg("maskthresh"),
             nb::arg("subpix"), nb::arg("minsig"), "sep.winpos, params (x, y, sig) per object: (x, y, flag).");
}

}  // namespace imflow::python
