// The LDAC_OBJECTS columns of a FITS_LDAC catalog: imflow's measurements under SExtractor's names
// and conventions (1-based pixel positions, angles in degrees, SExtractor's FLAGS bits), so that
// SCAMP and other AstrOmatic tools read them as SExtractor's. Only exact equivalents are listed;
// FLUX_ISO, FLUXERR_ISO and ELONGATION are float32, SExtractor's type, as PSFEx reads them.
#pragma once
#include <array>
#include <cstdint>

#include "catalog_columns.hpp"

namespace imflow::detail {

inline constexpr double kDegreesPerRadian = 57.29577951308232;
inline constexpr int64_t kSextractorTruncated = 8;        // SExtractor's FLAGS bit for a segment cut by the edge
inline constexpr int64_t kSextractorApertureCut = 16;     // its OBJ_APERT_PB: a photometry box cut by the edge
inline constexpr int64_t kSextractorCrowded = 1;          // its OBJ_CROWDED: neighbours or bad pixels
inline constexpr int64_t kSextractorSaturated = 4;        // its OBJ_SATUR: a pixel at the saturation level

// Source::flags as SExtractor's FLAGS: touching the edge is its 8 (truncated), a non-finite
// neighbour its 1 (bad pixels nearby; with FLUX_AUTO measured, SExtractor's crowding rule instead:
// catalog_output.cpp), a deblended object its 2 (originally blended), a saturated one its 4.
inline double sextractor_flags(const Source& s) {
  return double(((s.flags & kFlagEdge) ? kSextractorTruncated : 0) |
                ((s.flags & kFlagMaskedNeighbour) ? kSextractorCrowded : 0) |
                ((s.flags & kFlagDeblended) ? 2 : 0) | ((s.flags & kFlagSaturated) ? kSextractorSaturated : 0));
}

inline const std::array<CatalogColumn, 30>& ldac_columns() {
  static const std::array<CatalogColumn, 30> columns = {{
      {"NUMBER", "", 'J', [](const Source& s) { return double(s.id); }, "Running object number"},
      {"X_IMAGE", "pixel", 'D', [](const Source& s) { return s.x + 1.0; }, "Object position along x"},
      {"Y_IMAGE", "pixel", 'D', [](const Source& s) { return s.y + 1.0; }, "Object position along y"},
      {"ALPHA_SKY", "deg", 'D', [](const Source& s) { return s.ra; }, "Right ascension of barycenter (native)"},
      {"DELTA_SKY", "deg", 'D', [](const Source& s) { return s.dec; }, "Declination of barycenter (native)"},
      {"ISOAREA_IMAGE", "pixel**2", 'K', [](const Source& s) { return double(s.npix); }, "Isophotal area above Analysis threshold"},
      {"XMIN_IMAGE", "pixel", 'K', [](const Source& s) { return double(s.xmin + 1); }, "Minimum x-coordinate among detected pixels"},
      {"YMIN_IMAGE", "pixel", 'K', [](const Source& s) { return double(s.ymin + 1); }, "Minimum y-coordinate among detected pixels"},
      {"XMAX_IMAGE", "pixel", 'K', [](const Source& s) { return double(s.xmax + 1); }, "Maximum x-coordinate among detected pixels"},
      {"YMAX_IMAGE", "pixel", 'K', [](const Source& s) { return double(s.ymax + 1); }, "Maximum y-coordinate among detected pixels"},
      {"FLUX_ISO", "count", 'E', [](const Source& s) { return s.flux_iso; }, "Isophotal flux"},
      {"FLUXERR_ISO", "count", 'E', [](const Source& s) { return s.flux_iso_err; }, "RMS error for isophotal flux"},
      {"X2_IMAGE", "pixel**2", 'D', [](const Source& s) { return s.x2; }, "Variance along x"},
      {"Y2_IMAGE", "pixel**2", 'D', [](const Source& s) { return s.y2; }, "Variance along y"},
      {"XY_IMAGE", "pixel**2", 'D', [](const Source& s) { return s.xy; }, "Covariance between x and y"},
      {"ERRX2_IMAGE", "pixel**2", 'D', [](const Source& s) { return s.errx2; }, "Variance of position along x"},
      {"ERRY2_IMAGE", "pixel**2", 'D', [](const Source& s) { return s.erry2; }, "Variance of position along y"},
      {"ERRXY_IMAGE", "pixel**2", 'D', [](const Source& s) { return s.errxy; }, "Covariance of position between x and y"},
      {"A_IMAGE", "pixel", 'D', [](const Source& s) { return s.a; }, "Profile RMS along major axis"},
      {"B_IMAGE", "pixel", 'D', [](const Source& s) { return s.b; }, "Profile RMS along minor axis"},
      {"THETA_IMAGE", "deg", 'D', [](const Source& s) { return s.theta * kDegreesPerRadian; }, "Position angle (CCW/x)"},
      {"ERRA_IMAGE", "pixel", 'D', [](const Source& s) { return error_axis(s, true); }, "RMS position error along major axis"},
      {"ERRB_IMAGE", "pixel", 'D', [](const Source& s) { return error_axis(s, false); }, "RMS position error along minor axis"},
      {"ERRTHETA_IMAGE", "deg", 'D', [](const Source& s) { return error_angle(s) * kDegreesPerRadian; }, "Error ellipse position angle (CCW/x)"},
      {"CXX_IMAGE", "pixel**(-2)", 'D', [](const Source& s) { return s.cxx; }, "Cxx object ellipse parameter"},
      {"CYY_IMAGE", "pixel**(-2)", 'D', [](const Source& s) { return s.cyy; }, "Cyy object ellipse parameter"},
      {"CXY_IMAGE", "pixel**(-2)", 'D', [](const Source& s) { return s.cxy; }, "Cxy object ellipse parameter"},
      {"ELONGATION", "", 'E', [](const Source& s) { return s.a / s.b; }, "A_IMAGE/B_IMAGE"},
      {"ELLIPTICITY", "", 'D', [](const Source& s) { return 1.0 - s.b / s.a; }, "1 - B_IMAGE/A_IMAGE"},
      {"FLAGS", "", 'I', sextractor_flags, "Extraction flags"},
  }};
  return columns;
}

}  // namespace imflow::detail
