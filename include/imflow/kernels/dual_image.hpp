// SExtractor's dual-image rows: a source's positions, moments, shapes and their errors are the
// detection image's, its fluxes and peak the measured image's. Host and device (cuda/measure.cu).
#pragma once
#include "imflow/kernels/host_device.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

// Into `detected` (the detection image's row), the fluxes and peak of `measured` (the same
// object's row on the measured image).
IMFLOW_HOST_DEVICE inline void take_measured_fluxes(Source& detected, const Source& measured) {
  detected.flux = measured.flux;
  detected.flux_iso = measured.flux_iso;
  detected.flux_iso_err = measured.flux_iso_err;
  detected.peak = measured.peak;
  detected.peak_x = measured.peak_x;
  detected.peak_y = measured.peak_y;
}

}  // namespace imflow::kernels
