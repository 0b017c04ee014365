// A catalog's columns as written for one run: the fixed columns (catalog_columns.hpp,
// ldac_columns.hpp) followed by the photometry columns the measure step's parameters ask for,
// shared by the CSV, FITS and FITS_LDAC writers.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "catalog_columns.hpp"
#include "imflow/photometry.hpp"

namespace imflow::detail {

// SExtractor's 99.0: the magnitude (and its error) of a non-positive flux.
inline constexpr double kNoMagnitude = 99.0;
inline constexpr double kMagErrorFactor = 1.0857;  // 2.5 / ln 10, as SExtractor writes it

struct OutputColumn {
  enum class Kind { source, row, magnitude, magnitude_error, vignet };
  std::string name, unit, description;
  char form = 'D';  // CatalogColumn::form, or 'E' float32 (SExtractor's type for FITS_LDAC)
  Kind kind = Kind::source;
  double (*source_value)(const Source&) = nullptr;  // Kind::source; the flux of mag_iso
  double (*source_error)(const Source&) = nullptr;  // magerr_iso's flux error
  // Per element (repeat = offsets.size(), LDAC's vectors): the row values (Kind::row), or the
  // fluxes and their errors of the magnitudes.
  std::vector<int> offsets, error_offsets;
  double scale = 1.0, shift = 0.0;  // Kind::row: value x scale + shift
  int64_t bits = 0;                 // Kind::row, non-zero: the integer value's bits kept
  // Kind::row: where the flags at row[fallback_flag] have a FLAGS_WIN bit, fallback(s) x scale +
  // shift instead (SExtractor's windowed position reverts to the isophotal one).
  double (*fallback)(const Source&) = nullptr;
  int fallback_flag = 0;
  // Kind::row, >= 0: 0 where row[zero_unless_positive] <= 0 (SExtractor's KRON_RADIUS where
  // FLUX_AUTO <= 0: photom.c sets its kronfactor to 0 there).
  int zero_unless_positive = -1;
  std::vector<long> dims;  // Kind::vignet: (width, height), the TDIM; repeat = width x height
  // Kind::source, flag_row >= 0: the value less its flag_clear bits, with each row_flags' `set`
  // or-ed in where row[flag_row] has its `row` bit (LDAC's FLAGS: SExtractor's 16 where a
  // photometry box was cut by the image edge, its 1 where FLUX_AUTO's pixels are crowded).
  struct RowFlag {
    int64_t row, set;
  };
  int flag_row = -1;
  int64_t flag_clear = 0;
  std::vector<RowFlag> row_flags;

  int repeat() const {
    if (kind == Kind::vignet) return static_cast<int>(dims[0] * dims[1]);
    return offsets.empty() ? 1 : static_cast<int>(offsets.size());
  }
  bool integer() const { return form != 'D' && form != 'E'; }
};

inline double magnitude(double zeropoint, double flux) {
  return flux > 0.0 ? zeropoint - 2.5 * std::log10(flux) : kNoMagnitude;
}
inline double magnitude_error(double flux, double error) {
  return flux > 0.0 ? kMagErrorFactor * error / flux : kNoMagnitude;
}

// Element `e` of `column` for a source, its photometry row (nullptr without photometry) and its
// vignet (Kind::vignet).
inline double column_value(const OutputColumn& column, const Source& s, const double* row, double zeropoint, int e,
                           const float* vignet = nullptr) {
  switch (column.kind) {
    case OutputColumn::Kind::source: {
      const double value = column.source_value(s);
      if (column.flag_row < 0) return value;
      const auto from_row = static_cast<int64_t>(row[column.flag_row]);
      int64_t flags = static_cast<int64_t>(value) & ~column.flag_clear;
      for (const OutputColumn::RowFlag& bit : column.row_flags) {
        if ((from_row & bit.row) != 0) flags |= bit.set;
      }
      return static_cast<double>(flags);
    }
    case OutputColumn::Kind::row: {
      if (column.fallback != nullptr &&
          (static_cast<int64_t>(row[column.fallback_flag]) & kernels::kWinSextractorFlags) != 0) {
        return column.fallback(s) * column.scale + column.shift;
      }
      if (column.zero_unless_positive >= 0 && row[column.zero_unless_positive] <= 0.0) return 0.0;
      const double value = row[column.offsets[e]] * column.scale + column.shift;
      return column.bits != 0 ? static_cast<double>(static_cast<int64_t>(value) & column.bits) : value;
    }
    case OutputColumn::Kind::vignet: return vignet[e];
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

// How many of `columns` are, from the first, the fixed columns (kCatalogColumns, unchanged), whose
// values for_each_fixed_column() gives: all of them for the CSV and FITS catalogs, 0 for FITS_LDAC.
size_t leading_fixed_columns(const std::vector<OutputColumn>& columns);

// The CSV and FITS catalog's columns; the LDAC_OBJECTS columns under SExtractor's names.
std::vector<OutputColumn> catalog_output_columns(const PhotometryTable* photometry);
std::vector<OutputColumn> ldac_output_columns(const PhotometryTable* photometry);

}  // namespace imflow::detail
