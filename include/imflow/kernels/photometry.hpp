// The measure step's photometry (FLUX_AUTO, apertures, FLUX_RADIUS, windowed positions) for one
// source: plain fixed-size data in, a row of doubles out, compiled for the host and the device
// (cuda/photometry.cu fills the same rows).
#pragma once
#include <cstdint>

#include "imflow/kernels/aperture.hpp"
#include "imflow/kernels/photometry_spec.hpp"

namespace imflow::kernels {

// One source's row (spec.stride() values) on `image` (background-subtracted, with its noise,
// gain and `detected` mask; segmap: the label map, used when spec.mask_neighbours). The recipe is
// SEP 1.4.1's documented one (docs/astronomy.md): FLUX_AUTO as kernels::auto_flux; aperture sums with exact
// overlap (subpix 0), minus the local annulus's mean with aperture_bkgann; flux_radius within
// rmax = 6 a normalised by FLUX_AUTO (subpix 5); winpos with sig = 2 / 2.35 x flux_radius(0.5)
// (subpix 11), then SExtractor's windowed flux, moments, position errors and FLAGS_WIN
// (WindowValue; compute_winpos's formulas on the last step's sums). Flags are stored as doubles.
// A source without a finite position or ellipse gets NaN values and 0 flags. With `vignet` and
// spec.vignet_size() > 0 the source's VIGNET (copy_vignet; other objects blanked when
// spec.mask_neighbours) is written there. weight_gain_noise2 > 0 (the global background variance,
// with a weight map and input.weight.gain) is SExtractor's WEIGHT_GAIN: FLUXERR_AUTO and the
// apertures' errors (without aperture_bkgann) take its per-pixel Poisson terms (weight_gain.hpp),
// the windowed errors scale each pixel's (winpos). `kron_image` (dual-image mode: the detection
// image, background-subtracted, on the same grid) is where FLUX_AUTO's Kron radius is measured, as
// SExtractor does; nullptr: `image`.
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE void measure_photometry(ApertureImage image, const int32_t* segmap,
                                                  const PhotometrySpec& spec, const PhotometrySource& source,
                                                  double* row, float* vignet = nullptr,
                                                  double weight_gain_noise2 = 0.0,
                                                  const ApertureImage* kron_image = nullptr);

// SExtractor's VIGNET(width, height) (copyimage): the width x height pixels of `image.data`
// (background-subtracted) about ((int)(x + 0.49999), (int)(y + 0.49999)), 0-based, from column
// -width/2 and row -height/2 of it, row after row; -1e30 (SExtractor's -BIG, which PSFEx takes as
// bad) outside the image, on masked pixels, on other objects' pixels (blanked_pixel of `segmap`
// and image.detected for `label`: SExtractor's BLANK) and everywhere when that centre is outside
// the image.
template <typename Team = SerialTeam>
IMFLOW_HOST_DEVICE void copy_vignet(const ApertureImage& image, const int32_t* segmap, int32_t label, double x,
                                           double y, int width, int height, float* out);

}  // namespace imflow::kernels

#include "imflow/kernels/photometry_row.hpp"  // the definitions (host and device)
