// The catalog's columns, shared by the CSV and FITS writers so both always agree.
// Positions: x, y, peak_x, peak_y and the bounding box are 0-based (SciPy/SEP convention);
// X_IMAGE/Y_IMAGE are the same centroid 1-based (FITS/SExtractor convention). The error ellipse,
// elongation and ellipticity are derived from the Source's fields here.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "imflow/kernels/source_shape.hpp"
#include "imflow/source.hpp"

namespace imflow::detail {

// SExtractor's ERRA/ERRB/ERRTHETA: the ellipse of the centroid's covariance matrix, its axes and
// its angle computed apart (the angle's atan2 is the costly part).
inline double error_angle(const Source& s) { return kernels::ellipse_angle(s.errx2, s.erry2, s.errxy); }
inline double error_axis(const Source& s, bool major) {
  return kernels::ellipse_semi_axis(s.errx2, s.erry2, s.errxy, major);
}

struct CatalogColumn {
  const char* name;
  const char* unit;
  char form;  // FITS TFORM: 'K' int64, 'J' int32, 'I' int16 (integers in the CSV), 'D' float64
  double (*value)(const Source&);
  const char* description;  // the TTYPE keyword's comment
  constexpr bool integer() const { return form != 'D'; }
};

// A constant table, so that for_each_fixed_column() calls its functions directly (inlined).
inline constexpr std::array<CatalogColumn, 36> kCatalogColumns = {{
    {"id", "", 'K', [](const Source& s) { return double(s.id); }, "label, in raster order of first pixel"},
    {"x", "pix", 'D', [](const Source& s) { return s.x; }, "centroid x, 0-based"},
    {"y", "pix", 'D', [](const Source& s) { return s.y; }, "centroid y, 0-based"},
    {"X_IMAGE", "pix", 'D', [](const Source& s) { return s.x + 1.0; }, "centroid x, 1-based (FITS)"},
    {"Y_IMAGE", "pix", 'D', [](const Source& s) { return s.y + 1.0; }, "centroid y, 1-based (FITS)"},
    {"ra", "deg", 'D', [](const Source& s) { return s.ra; }, "right ascension of the centroid (image WCS), NaN without one"},
    {"dec", "deg", 'D', [](const Source& s) { return s.dec; }, "declination of the centroid (image WCS), NaN without one"},
    {"flux", "adu", 'D', [](const Source& s) { return s.flux; }, "sum of pixel values (FLUX_ISO)"},
    {"npix", "pix", 'K', [](const Source& s) { return double(s.npix); }, "pixels in the segment (ISOAREA)"},
    {"peak", "adu", 'D', [](const Source& s) { return s.peak; }, "maximum pixel value"},
    {"peak_x", "pix", 'K', [](const Source& s) { return double(s.peak_x); }, "x of the peak, 0-based"},
    {"peak_y", "pix", 'K', [](const Source& s) { return double(s.peak_y); }, "y of the peak, 0-based"},
    {"xmin", "pix", 'K', [](const Source& s) { return double(s.xmin); }, "bounding box, 0-based, inclusive"},
    {"xmax", "pix", 'K', [](const Source& s) { return double(s.xmax); }, ""},
    {"ymin", "pix", 'K', [](const Source& s) { return double(s.ymin); }, ""},
    {"ymax", "pix", 'K', [](const Source& s) { return double(s.ymax); }, ""},
    {"flux_iso", "adu", 'D', [](const Source& s) { return s.flux_iso; }, "sum of background-subtracted values (FLUX_ISO)"},
    {"flux_iso_err", "adu", 'D', [](const Source& s) { return s.flux_iso_err; }, "error of flux_iso from the background rms and gain (FLUXERR_ISO)"},
    {"x2", "pix**2", 'D', [](const Source& s) { return s.x2; }, "second moment x (X2_IMAGE)"},
    {"y2", "pix**2", 'D', [](const Source& s) { return s.y2; }, "second moment y (Y2_IMAGE)"},
    {"xy", "pix**2", 'D', [](const Source& s) { return s.xy; }, "second moment xy (XY_IMAGE)"},
    {"errx2", "pix**2", 'D', [](const Source& s) { return s.errx2; }, "variance of the centroid x (ERRX2_IMAGE)"},
    {"erry2", "pix**2", 'D', [](const Source& s) { return s.erry2; }, "variance of the centroid y (ERRY2_IMAGE)"},
    {"errxy", "pix**2", 'D', [](const Source& s) { return s.errxy; }, "covariance of the centroid (ERRXY_IMAGE)"},
    {"erra", "pix", 'D', [](const Source& s) { return error_axis(s, true); }, "major axis of the centroid's error ellipse (ERRA_IMAGE)"},
    {"errb", "pix", 'D', [](const Source& s) { return error_axis(s, false); }, "minor axis of the centroid's error ellipse (ERRB_IMAGE)"},
    {"errtheta", "rad", 'D', [](const Source& s) { return error_angle(s); }, "angle of the error ellipse from +x to +y (ERRTHETA_IMAGE)"},
    {"a", "pix", 'D', [](const Source& s) { return s.a; }, "semi-major axis (A_IMAGE)"},
    {"b", "pix", 'D', [](const Source& s) { return s.b; }, "semi-minor axis (B_IMAGE)"},
    {"theta", "rad", 'D', [](const Source& s) { return s.theta; }, "position angle from +x to +y (SEP theta)"},
    {"elongation", "", 'D', [](const Source& s) { return s.a / s.b; }, "a / b (ELONGATION)"},
    {"ellipticity", "", 'D', [](const Source& s) { return 1.0 - s.b / s.a; }, "1 - b / a (ELLIPTICITY)"},
    {"cxx", "pix**(-2)", 'D', [](const Source& s) { return s.cxx; }, "ellipse parameter (CXX_IMAGE)"},
    {"cyy", "pix**(-2)", 'D', [](const Source& s) { return s.cyy; }, "ellipse parameter (CYY_IMAGE)"},
    {"cxy", "pix**(-2)", 'D', [](const Source& s) { return s.cxy; }, "ellipse parameter (CXY_IMAGE)"},
    {"flags", "", 'K', [](const Source& s) { return double(s.flags); }, "1 touches the image edge, 2 masked neighbour, 4 deblended, 8 singular moments"},
}};

// Calls cell(index, value) for each fixed column of a source, in order, without a call through a
// pointer per value; `index` is a std::integral_constant, so kCatalogColumns[index]'s form is
// known when compiling (no branch on a column's kind per cell).
template <typename Cell>
inline void for_each_fixed_column(const Source& s, Cell&& cell) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    (cell(std::integral_constant<size_t, I>{}, kCatalogColumns[I].value(s)), ...);
  }(std::make_index_sequence<kCatalogColumns.size()>{});
}

}  // namespace imflow::detail
