// Results of the astronomy steps: background statistics and one catalog row per source.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

namespace imflow {

// Kappa-sigma clipped statistics of the valid (finite) pixels; with the mesh method (SEP's
// background), median and std are SEP's globalback and globalrms and the maps are in the WorkItem.
struct BackgroundStats {
  double median = 0.0;     // median of the final kept set (mean of the two middle values if even)
  double std = 0.0;        // population standard deviation (ddof 0) of the final kept set
  int iterations = 0;      // passes that computed median and std, the last one clipping nothing
  int64_t kept = 0;        // pixels in the final kept set
  int64_t valid = 0;       // finite pixels in the image
  int64_t meshes = 0;      // mesh method: meshes in the grid (0: the global kappa-sigma method)
  int64_t meshes_dropped = 0;  // mesh method: meshes with fewer than half of their pixels valid
};

// Bits of Source::flags.
inline constexpr int32_t kFlagEdge = 1;         // the segment touches the image edge (SExtractor's 8)
inline constexpr int32_t kFlagMaskedNeighbour = 2;  // a non-finite pixel is 8-adjacent to the segment
// The object is one of several that `deblend` split a segment into (SExtractor's FLAGS 2, SEP's
// flag 1 OBJ_MERGED); its x, y are SEP's centre of the blend's branch (docs/astronomy.md).
inline constexpr int32_t kFlagDeblended = 4;
// The second moments were singular (a line or a point: x2 y2 - xy^2 < 0.00694) and SEP's 1/12 pix^2
// was added to x2 and y2 (SEP's flag 8 OBJ_SINGU, SExtractor's singuflag).
inline constexpr int32_t kFlagSingular = 8;
// The source's peak pixel reached the measure step's saturation level (SExtractor's FLAGS 4).
inline constexpr int32_t kFlagSaturated = 16;

// One connected component. Positions are 0-based pixel indices (SciPy's convention: the centre
// of the first pixel is 0.0); add 1 for FITS/SExtractor 1-based columns.
struct Source {
  int32_t id = 0;          // label, numbered in raster order of first pixel (SciPy's order)
  double x = 0.0;          // intensity-weighted centroid (scipy.ndimage.center_of_mass)
  double y = 0.0;
  // Sky position of the centroid from the image's WCS (degrees, its RADESYS/EQUINOX); NaN
  // without an equatorial WCS. Set on the host when the catalog is written (include/imflow/io/wcs.hpp).
  double ra = std::numeric_limits<double>::quiet_NaN();
  double dec = std::numeric_limits<double>::quiet_NaN();
  double flux = 0.0;       // sum of pixel values in the segment (scipy.ndimage.sum_labels)
  int64_t npix = 0;        // pixels in the segment
  double peak = 0.0;       // maximum pixel value
  int64_t peak_x = 0;      // position of the first maximum in raster order
  int64_t peak_y = 0;
  int64_t xmin = 0, xmax = 0, ymin = 0, ymax = 0;  // inclusive bounding box
  // SEP/SExtractor measurements on the background-subtracted values w (value - background):
  double flux_iso = 0.0;   // sum of w (FLUX_ISO)
  // Errors from the per-pixel variance rms^2 (+ w / gain for w > 0 with a gain): NaN without a
  // background noise estimate (kernels::pixel_variance).
  double flux_iso_err = 0.0;  // sqrt(sum of the variances) (FLUXERR_ISO)
  double x2 = 0.0, y2 = 0.0, xy = 0.0;  // w-weighted central second moments (X2, Y2, XY), pix^2
  double errx2 = 0.0, erry2 = 0.0, errxy = 0.0;  // variances of the centroid (ERRX2, ERRY2, ERRXY), pix^2
  double a = 0.0, b = 0.0; // ellipse semi-axes (A, B), pix
  double theta = 0.0;      // ellipse angle from +x towards +y, radians in [-pi/2, pi/2] (SEP's theta; +-pi/2 alike)
  double cxx = 0.0, cyy = 0.0, cxy = 0.0;  // ellipse parameters (CXX, CYY, CXY), pix^-2
  int32_t flags = 0;       // kFlagEdge | kFlagMaskedNeighbour | kFlagDeblended | kFlagSingular | kFlagSaturated
  // With a flag map (input.flags): the OR of its values over the segment's pixels and the number
  // of those pixels with a non-zero value (SExtractor's IMAFLAGS_ISO, FLAG_TYPE OR, NIMAFLAGS_ISO).
  int32_t imaflags_iso = 0;
  int32_t nimaflags_iso = 0;
};

using Catalog = std::vector<Source>;

}  // namespace imflow
