// The extension module imflow._imflow: registers the bindings (each in its own file).
#include <nanobind/nanobind.h>

#include "bindings.hpp"

NB_MODULE(_imflow, module) {
  module.doc() = "imflow's C++ engine and kernels (use the imflow and imflow.sep packages)";
  module.attr("__version__") = IMFLOW_VERSION;
  imflow::python::bind_logging(module);
  imflow::python::bind_errors(module);
  imflow::python::bind_background(module);
  imflow::python::bind_extract(module);
  imflow::python::bind_run(module);
  imflow::python::bind_extract_image(module);
  imflow::python::bind_apertures(module);
  imflow::python::bind_gpu(module);
}
