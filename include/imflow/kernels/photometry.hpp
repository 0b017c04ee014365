// The measure step's photometry (FLUX_AUTO, apertures, FLUX_RADIUS, windowed positions) for one
// source: plain fixed-size data in, a row of doubles out, so a CUDA kernel can fill the same rows.
#pragma once
#include <cstdint>

#include "imflow/kernels/aperture.hpp"
#include "imflow/kernels/photometry_spec.hpp"

namespace imflow::kernels {

// One source's row (spec.stride() values) on `image` (background-subtracted, with its noise and
// gain; segmap: the label map, used when spec.mask_neighbours). The recipe is SEP 1.4.1's
// documented one (docs/astronomy.md): FLUX_AUTO as kernels::auto_flux; aperture sums with exact
// overlap (subpix 0), minus the local annulus's mean with aperture_bkgann; flux_radius within
// rmax = 6 a normalised by FLUX_AUTO (subpix 5); winpos with sig = 2 / 2.35 x flux_radius(0.5)
// (subpix 11). Flags are stored as doubles. A source without a finite position or ellipse gets
// NaN values and 0 flags.
void measure_photometry(ApertureImage image, const int32_t* segmap, const PhotometrySpec& spec,
                        const PhotometrySource& source, double* row);

}  // namespace imflow::kernels
