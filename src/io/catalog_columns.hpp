// The catalog's columns, shared by the CSV and FITS writers so both always agree.
// Positions: x, y, peak_x, peak_y and the bounding box are 0-based (SciPy/SEP convention);
// X_IMAGE/Y_IMAGE are the same centroid 1-based (FITS/SExtractor convention).
#pragma once
#include <array>
#include <cstdint>

#include "imflow/source.hpp"

namespace imflow::detail {

struct CatalogColumn {
  const char* name;
  const char* unit;
  bool integer;  // int64 ('K') when true, float64 ('D') otherwise
  double (*value)(const Source&);
  const char* description;
};

inline const std::array<CatalogColumn, 31>& catalog_columns() {
  static const std::array<CatalogColumn, 31> columns = {{
      {"id", "", true, [](const Source& s) { return double(s.id); }, "label, in raster order of first pixel"},
      {"x", "pix", false, [](const Source& s) { return s.x; }, "centroid x, 0-based"},
      {"y", "pix", false, [](const Source& s) { return s.y; }, "centroid y, 0-based"},
      {"X_IMAGE", "pix", false, [](const Source& s) { return s.x + 1.0; }, "centroid x, 1-based (FITS)"},
      {"Y_IMAGE", "pix", false, [](const Source& s) { return s.y + 1.0; }, "centroid y, 1-based (FITS)"},
      {"ra", "deg", false, [](const Source& s) { return s.ra; }, "right ascension of the centroid (image WCS), NaN without one"},
      {"dec", "deg", false, [](const Source& s) { return s.dec; }, "declination of the centroid (image WCS), NaN without one"},
      {"flux", "adu", false, [](const Source& s) { return s.flux; }, "sum of pixel values (FLUX_ISO)"},
      {"npix", "pix", true, [](const Source& s) { return double(s.npix); }, "pixels in the segment (ISOAREA)"},
      {"peak", "adu", false, [](const Source& s) { return s.peak; }, "maximum pixel value"},
      {"peak_x", "pix", true, [](const Source& s) { return double(s.peak_x); }, "x of the peak, 0-based"},
      {"peak_y", "pix", true, [](const Source& s) { return double(s.peak_y); }, "y of the peak, 0-based"},
      {"xmin", "pix", true, [](const Source& s) { return double(s.xmin); }, "bounding box, 0-based, inclusive"},
      {"xmax", "pix", true, [](const Source& s) { return double(s.xmax); }, ""},
      {"ymin", "pix", true, [](const Source& s) { return double(s.ymin); }, ""},
      {"ymax", "pix", true, [](const Source& s) { return double(s.ymax); }, ""},
      {"flux_iso", "adu", false, [](const Source& s) { return s.flux_iso; }, "sum of background-subtracted values (FLUX_ISO)"},
      {"flux_iso_err", "adu", false, [](const Source& s) { return s.flux_iso_err; }, "error of flux_iso from the background rms and gain (FLUXERR_ISO)"},
      {"x2", "pix**2", false, [](const Source& s) { return s.x2; }, "second moment x (X2_IMAGE)"},
      {"y2", "pix**2", false, [](const Source& s) { return s.y2; }, "second moment y (Y2_IMAGE)"},
      {"xy", "pix**2", false, [](const Source& s) { return s.xy; }, "second moment xy (XY_IMAGE)"},
      {"errx2", "pix**2", false, [](const Source& s) { return s.errx2; }, "variance of the centroid x (ERRX2_IMAGE)"},
      {"erry2", "pix**2", false, [](const Source& s) { return s.erry2; }, "variance of the centroid y (ERRY2_IMAGE)"},
      {"errxy", "pix**2", false, [](const Source& s) { return s.errxy; }, "covariance of the centroid (ERRXY_IMAGE)"},
      {"a", "pix", false, [](const Source& s) { return s.a; }, "semi-major axis (A_IMAGE)"},
      {"b", "pix", false, [](const Source& s) { return s.b; }, "semi-minor axis (B_IMAGE)"},
      {"theta", "rad", false, [](const Source& s) { return s.theta; }, "position angle from +x to +y (SEP theta)"},
      {"cxx", "pix**(-2)", false, [](const Source& s) { return s.cxx; }, "ellipse parameter (CXX_IMAGE)"},
      {"cyy", "pix**(-2)", false, [](const Source& s) { return s.cyy; }, "ellipse parameter (CYY_IMAGE)"},
      {"cxy", "pix**(-2)", false, [](const Source& s) { return s.cxy; }, "ellipse parameter (CXY_IMAGE)"},
      {"flags", "", true, [](const Source& s) { return double(s.flags); }, "1 touches the image edge, 2 masked neighbour"},
  }};
  return columns;
}

}  // namespace imflow::detail
