// A catalog's columns as written for one run: the fixed columns (catalog_columns.hpp,
// ldac_columns.hpp) followed by the photometry columns the measure step's parameters ask for,
// shared by the CSV, FITS and FITS_LDAC writers.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "catalog_columns.hpp"
#include "imflow/photometry.hpp"

namespace imflow::detail {

// SExtractor's 99.0: the magnitude (and its error) of a non-positive flux.
inline constexpr double kNoMagnitude = 99.0;
inline constexpr double kMagErrorFactor = 1.0857;  // 2.5 / ln 10, as SExtractor writes it

struct OutputColumn {
  enum class Kind { source, row, magnitude, magnitude_error };
  std::string name, unit, description;
  char form = 'D';  // CatalogColumn::form
  Kind kind = Kind::source;
  double (*source_value)(const Source&) = nullptr;  // Kind::source; the flux of mag_iso
  double (*source_error)(const Source&) = nullptr;  // magerr_iso's flux error
  // Per element (repeat = offsets.size(), LDAC's vectors): the row values (Kind::row), or the
  // fluxes and their errors of the magnitudes.
  std::vector<int> offsets, error_offsets;
  double scale = 1.0, shift = 0.0;  // Kind::row: value x scale + shift

  int repeat() const { return offsets.empty() ? 1 : static_cast<int>(offsets.size()); }
  bool integer() const { return form != 'D'; }
};

inline double magnitude(double zeropoint, double flux) {
  return flux > 0.0 ? zeropoint - 2.5 * std::log10(flux) : kNoMagnitude;
}
inline double magnitude_error(double flux, double error) {
  return flux > 0.0 ? kMagErrorFactor * error / flux : kNoMagnitude;
}

// Element `e` of `column` for a source and its photometry row (nullptr without photometry).
inline double column_value(const OutputColumn& column, const Source& s, const double* row, double zeropoint, int e) {
  switch (column.kind) {
    case OutputColumn::Kind::source: return column.source_value(s);
    case OutputColumn::Kind::row: return row[column.offsets[e]] * column.scale + column.shift;
    case OutputColumn::Kind::magnitude:
      return magnitude(zeropoint, column.source_value ? column.source_value(s) : row[column.offsets[e]]);
    case OutputColumn::Kind::magnitude_error:
      return column.source_value ? magnitude_error(column.source_value(s), column.source_error(s))
                                 : magnitude_error(row[column.offsets[e]], row[column.error_offsets[e]]);
  }
  return 0.0;
}

// The shortest text of a number that reads back the same ("5", "7.5"): photometry column suffixes.
std::string shortest_number(double value);

// The CSV and FITS catalog's columns; the LDAC_OBJECTS columns under SExtractor's names.
std::vector<OutputColumn> catalog_output_columns(const PhotometryTable* photometry);
std::vector<OutputColumn> ldac_output_columns(const PhotometryTable* photometry);

}  // namespace imflow::detail
