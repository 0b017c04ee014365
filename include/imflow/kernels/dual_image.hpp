// SExtractor's dual-image rows: a source's positions, moments, shapes and their errors are the
// detection image's, its fluxes and peak the measured image's; and its CLEAN's merged rows: a
// survivor's moments are its own pixels', its sums, extent and flags those of everything merged
// into it. Host and device (cuda/measure.cu, cuda/catalog_rows.cu).
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

// Into `own` (a CLEAN survivor's row measured on its own pixels), what SExtractor's mergeobject
// adds up over the objects merged into it, from `merged` (the row of all its pixels): the fluxes,
// peak, pixel count and box, and the flags of both.
IMFLOW_HOST_DEVICE inline void take_merged_sums(Source& own, const Source& merged) {
  take_measured_fluxes(own, merged);
  own.npix = merged.npix;
  own.xmin = merged.xmin;
  own.xmax = merged.xmax;
  own.ymin = merged.ymin;
  own.ymax = merged.ymax;
  own.flags |= merged.flags;
}

}  // namespace imflow::kernels
