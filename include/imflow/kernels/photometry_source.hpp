// What the photometry reads of a catalog row (kernels::PhotometrySource from imflow::Source), on
// the host (src/steps/measure_photometry.cpp) and the device (cuda/photometry.cu) alike.
#pragma once
#include "imflow/kernels/host_device.hpp"
#include "imflow/kernels/photometry_spec.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

// The source's position, ellipse, label, isophotal moments, centroid covariance and whether SEP's
// 1/12 pix^2 was added to its moments (kFlagSingular, SExtractor's singuflag).
IMFLOW_HOST_DEVICE inline PhotometrySource photometry_source(const Source& s) {
  PhotometrySource source{s.x, s.y, s.a, s.b, s.theta, s.id};
  source.x2 = s.x2, source.y2 = s.y2, source.xy = s.xy;
  source.errx2 = s.errx2, source.erry2 = s.erry2, source.errxy = s.errxy;
  source.singular = (s.flags & kFlagSingular) != 0;
  return source;
}

}  // namespace imflow::kernels
