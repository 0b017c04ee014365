// sep.Background's maps: kernels::mesh_background (SEP's back(), rms(), globalback, globalrms).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <stdexcept>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "imflow/kernels/background_mesh.hpp"

namespace nb = nanobind;

namespace imflow::python {

namespace {
// (back, rms, globalback, globalrms) of a float32 image whose masked pixels are NaN.
nb::tuple mesh_background(const Image& image, int64_t bw, int64_t bh, int64_t fw, int64_t fh, double fthresh) {
  if (bw < 1 || bh < 1) throw std::invalid_argument("bw and bh must be >= 1");
  if (fw < 1 || fh < 1) throw std::invalid_argument("fw and fh must be >= 1");
  const ConstImageView view = view_of(image);
  const kernels::MeshParams params{
      .mesh_width = bw, .mesh_height = bh, .filter_width = fw, .filter_height = fh, .filter_threshold = fthresh};
  std::vector<float> back, rms;
  BackgroundStats stats;
  {
    nb::gil_scoped_release unlocked;
    stats = kernels::mesh_background(view, params, back, rms);
  }
  const size_t h = image.shape(0), w = image.shape(1);
  return nb::make_tuple(to_numpy(std::move(back), {h, w}), to_numpy(std::move(rms), {h, w}),
                        static_cast<float>(stats.median), static_cast<float>(stats.std));
}
}  // namespace

void bind_background(nb::module_& module) {
  module.def("mesh_background", &mesh_background, nb::arg("image"), nb::arg("bw"), nb::arg("bh"), nb::arg("fw"),
             nb::arg("fh"), nb::arg("fthresh"),
             "SEP's mesh background of a float32 image (NaN: masked): (back, rms, globalback, globalrms).");
}

}  // namespace imflow::python
