// A catalog row's CSV text (the 36 columns of src/io/catalog_columns.hpp, without photometry),
// cell by cell, for the host and CUDA kernels: the device writes every cell but the three the host
// computes when it writes the file (ra and dec from the image's WCS, errtheta's atan2, which the
// device does not round as the host's libm), and the host puts those into the row's gaps.
#pragma once
#include <cstdint>

#include "imflow/kernels/host_device.hpp"
#include "imflow/kernels/shortest_decimal.hpp"
#include "imflow/kernels/source_shape.hpp"
#include "imflow/source.hpp"

namespace imflow::kernels {

inline constexpr int kCsvRowCells = 36;
inline constexpr int kCsvRaCell = 5, kCsvDecCell = 6, kCsvErrthetaCell = 26;
// A cell's text is at most kShortestTextChars (24) characters and ".0": a row at most 36 x 27 bytes.
inline constexpr int kCsvNumberChars = kShortestTextChars + 2;
inline constexpr int kCsvRowMaxChars = kCsvRowCells * (kCsvNumberChars + 1);

IMFLOW_HOST_DEVICE inline bool csv_cell_from_host(int cell) {
  return cell == kCsvRaCell || cell == kCsvDecCell || cell == kCsvErrthetaCell;
}

IMFLOW_HOST_DEVICE inline bool csv_cell_integer(int cell) {
  return cell == 0 || cell == 8 || (cell >= 10 && cell <= 15) || cell == 35;
}

// The value of a cell as catalog_columns.hpp computes it (integers through a double, as there).
IMFLOW_HOST_DEVICE inline double csv_cell_value(const Source& s, int cell) {
  switch (cell) {
    case 0: return static_cast<double>(s.id);
    case 1: return s.x;
    case 2: return s.y;
    case 3: return s.x + 1.0;
    case 4: return s.y + 1.0;
    case 5: return s.ra;
    case 6: return s.dec;
    case 7: return s.flux;
    case 8: return static_cast<double>(s.npix);
    case 9: return s.peak;
    case 10: return static_cast<double>(s.peak_x);
    case 11: return static_cast<double>(s.peak_y);
    case 12: return static_cast<double>(s.xmin);
    case 13: return static_cast<double>(s.xmax);
    case 14: return static_cast<double>(s.ymin);
    case 15: return static_cast<double>(s.ymax);
    case 16: return s.flux_iso;
    case 17: return s.flux_iso_err;
    case 18: return s.x2;
    case 19: return s.y2;
    case 20: return s.xy;
    case 21: return s.errx2;
    case 22: return s.erry2;
    case 23: return s.errxy;
    case 24: return ellipse_semi_axis(s.errx2, s.erry2, s.errxy, true);
    case 25: return ellipse_semi_axis(s.errx2, s.erry2, s.errxy, false);
    case 26: return ellipse_angle(s.errx2, s.erry2, s.errxy);
    case 27: return s.a;
    case 28: return s.b;
    case 29: return s.theta;
    case 30: return s.a / s.b;
    case 31: return 1.0 - s.b / s.a;
    case 32: return s.cxx;
    case 33: return s.cyy;
    case 34: return s.cxy;
    default: return static_cast<double>(s.flags);
  }
}

// NaN and +-Infinity as the CSV spells them, which Python's float() and Java's parseDouble
// (TOPCAT) both read; the host's writer (src/io/catalog_csv.cpp) spells them with this too.
IMFLOW_HOST_DEVICE inline const char* csv_non_finite_text(double value) {
  return value != value ? "NaN" : value > 0 ? "Infinity" : "-Infinity";
}

// A float column's whole number written without a point ("690438", "0") gets ".0": CSV readers
// (pandas, astropy, TOPCAT) type a column by its text, and would read one of whole numbers as
// integers (and divide them as integers).
IMFLOW_HOST_DEVICE inline bool csv_whole_number(const ShortestLayout& t) { return t.fixed && t.decimal.exponent >= 0; }

// A number as the CSV writes it: integers as integers, NaN and +-Infinity as above, else the
// shortest text (std::to_chars's), ".0" after a whole number's digits.
IMFLOW_HOST_DEVICE inline char* write_csv_number(char* out, double value, bool integer, const uint64_t* powers) {
  if (integer) return write_integer_text(out, static_cast<long long>(value));
  if (value - value == 0.0) {
    const ShortestLayout layout = shortest_layout(value, powers);
    out = write_shortest_text(out, value, layout);
    if (csv_whole_number(layout)) {
      *out++ = '.';
      *out++ = '0';
    }
    return out;
  }
  for (const char* text = csv_non_finite_text(value); *text != '\0'; ++text) *out++ = *text;
  return out;
}

// The length of write_csv_number's text, without writing it.
IMFLOW_HOST_DEVICE inline int csv_number_length(double value, bool integer, const uint64_t* powers) {
  if (integer) return integer_text_length(static_cast<long long>(value));
  if (value - value == 0.0) {
    const ShortestLayout layout = shortest_layout(value, powers);
    return layout.length + (csv_whole_number(layout) ? 2 : 0);
  }
  int length = 0;
  for (const char* text = csv_non_finite_text(value); *text != '\0'; ++text) ++length;
  return length;
}

IMFLOW_HOST_DEVICE inline int csv_cell_length(const Source& s, int cell, const uint64_t* powers) {
  if (csv_cell_from_host(cell)) return 0;
  return csv_number_length(csv_cell_value(s, cell), csv_cell_integer(cell), powers);
}

// Cell `cell`'s text, empty for the cells the host writes; no separator.
IMFLOW_HOST_DEVICE inline char* write_csv_cell(char* out, const Source& s, int cell, const uint64_t* powers) {
  if (csv_cell_from_host(cell)) return out;
  return write_csv_number(out, csv_cell_value(s, cell), csv_cell_integer(cell), powers);
}

}  // namespace imflow::kernels
