// Per-source measurements from a label map, CPU kernel.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/kernels/background_mesh.hpp"
#include "imflow/kernels/source_sums.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

// The background that measurements subtract.
// - map (the mesh method): every value becomes value - map[i] (flux, centroid, peak, moments:
//   SEP's measurements of data - bkg); `map` is laid out like the image view.
// - else `level` (the global method's median): flux, centroid and peak stay on the raw values
//   (SciPy's, the lesson's), flux_iso and the moments use value - level.
// The noise the error columns use (kernels::pixel_variance): the RMS map (`rms_map`, laid out
// like the image view, or `rms_grid`, the CPU mesh background's grid, evaluated row by row for the
// rows that hold sources; the whole image's rows, so tiles do not use it), else the global `rms`
// (NaN: no noise estimate, NaN errors); `gain` (e-/ADU, 0: none) adds the sources' Poisson noise,
// scaled per pixel by rms^2 / weight_gain_rms^2 where weight_gain_rms > 0 (a weight map's RMS map
// with input.weight.gain, SExtractor's WEIGHT_GAIN: weight_gain_rms is the global background RMS).
struct MeasureBackground {
  const float* map = nullptr;
  double level = 0.0;
  const float* rms_map = nullptr;
  const MeshGrid* rms_grid = nullptr;
  double rms = std::numeric_limits<double>::quiet_NaN();
  double gain = 0.0;
  double weight_gain_rms = 0.0;

  // The same noise with nothing to subtract: for an image already less its background (a
  // detection image filtered after the background step).
  MeasureBackground noise_only() const {
    MeasureBackground noise = *this;
    noise.map = nullptr;
    noise.level = 0.0;
    return noise;
  }
};

// One raster pass: the accumulators of labels 1..nlabels (index label-1). (x0, y0) is the
// position of image(0, 0) in the whole image, so tiles accumulate in image coordinates.
// kFlagMaskedNeighbour is set for a label with a non-finite pixel among the 8 neighbours of one
// of its pixels, looking inside `image` only (a tile sees the pixels of its view).
std::vector<SourceSums> accumulate_sources(ConstImageView image, const int32_t* labels, int32_t nlabels,
                                           int64_t x0 = 0, int64_t y0 = 0, MeasureBackground background = {});

// The catalog of accumulators, ids 1..n in order. (width, height): the whole image's size.
Catalog finish_sources(const std::vector<SourceSums>& sums, int64_t width, int64_t height);

// One pass over the image: for every label 1..nlabels, npix, flux (sum), intensity-weighted
// centroid, peak (first maximum in raster order), bounding box, flux_iso, second moments, ellipse
// and flags. Sums in float64.
Catalog measure_sources(ConstImageView image, const int32_t* labels, int32_t nlabels,
                        MeasureBackground background = {});

struct DeblendResult;  // include/imflow/kernels/deblend.hpp
// measure_sources for the objects `deblend` made (labels 1..objects.size()): the children of a
// blend are measured as SEP's analyse does, x, y its centre (DeblendObject::x, y) with the
// moments and their errors about it (SourceSums::finish_about), flagged kFlagDeblended, and
// kFlagEdge when its branch touches the edge (DeblendObject::truncated); an object into which
// SExtractor's CLEAN merged others (DeblendObject::merged) keeps its own centre likewise, its
// other columns over all its pixels, merged ones included. Throws
// std::runtime_error when nlabels is not the number of objects.
Catalog measure_deblended(ConstImageView image, const int32_t* labels, int32_t nlabels, const DeblendResult& deblend,
                          MeasureBackground background = {});

}  // namespace imflow::kernels
