// The binding functions module.cpp calls, one per source file.
#pragma once
#include <nanobind/nanobind.h>

namespace imflow::python {

void bind_errors(nanobind::module_& module);      // errors.cpp: imflow's exceptions as Python exceptions
void bind_background(nanobind::module_& module);  // background.cpp: SEP's mesh background maps
void bind_extract(nanobind::module_& module);     // extract.cpp: sep.extract's detection, deblending and measurements
void bind_run(nanobind::module_& module);         // run.cpp: run_pipeline over a directory
void bind_extract_image(nanobind::module_& module);  // extract_image.cpp: a pipeline over one in-memory image
void bind_apertures(nanobind::module_& module);   // apertures.cpp: SEP's aperture sums, kron_radius, flux_radius, winpos
void bind_gpu(nanobind::module_& module);         // gpu.cpp: device="cuda" for sep.Background and sep.extract
void bind_logging(nanobind::module_& module);     // logging.cpp: the engine's log on stderr, set_log_level

}  // namespace imflow::python
