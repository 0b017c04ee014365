// Catalogs as CSV (header row of column names; full float64 precision; NaN and +-Infinity spelled
// so that Python and Java readers both parse them). Large catalogs are
// formatted in blocks of rows on all threads and written in order: the same bytes as one string.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "catalog_output.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/catalog.hpp"
#include "imflow/io/written_text.hpp"
#include "ordered_blocks.hpp"
#include "shortest_double.hpp"

namespace imflow {

namespace {
std::string csv_header(const std::vector<detail::OutputColumn>& columns) {
  std::string out;
  for (size_t c = 0; c < columns.size(); ++c) {
    if (c) out += ',';
    out += columns[c].name;
  }
  out += '\n';
  return out;
}

void append_rows(const std::vector<detail::OutputColumn>& columns, const Catalog& catalog, size_t begin, size_t end,
                 const PhotometryTable* photometry, std::string& out) {
  // ~12.5 characters a column on average: one allocation for most blocks, no copy on growth.
  out.reserve(out.size() + (end - begin) * columns.size() * 14);
  const double zeropoint = photometry && photometry->zeropoint ? *photometry->zeropoint : 0.0;
  // The shortest text that reads back to the same double (detail::write_shortest, the same text
  // as std::to_chars). A row is at most 25 characters a column, built in `row` (with the room
  // write_shortest may write past a number) and appended once.
  std::vector<char> buffer(columns.size() * 26 + detail::kShortestDoubleChars + 1);
  char* const row = buffer.data();
  char* const row_end = row + buffer.size();
  const size_t fixed = detail::leading_fixed_columns(columns);
  double fixed_values[detail::kCatalogColumns.size()];
  for (size_t i = begin; i < end; ++i) {
    const Source& source = catalog[i];
    const double* values = photometry ? photometry->row(i) : nullptr;
    if (fixed != 0) detail::fixed_column_values(source, fixed_values);
    char* at = row;
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c) *at++ = ',';
      const double value = c < fixed ? fixed_values[c] : detail::column_value(columns[c], source, values, zeropoint, 0);
      if (columns[c].integer()) {
        at = std::to_chars(at, row_end, static_cast<long long>(value)).ptr;
      } else if (std::isfinite(value)) {
        at = detail::write_shortest(at, value);
      } else {  // the spellings both Python's float() and Java's (TOPCAT) parseDouble read
        const char* text = std::isnan(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity";
        at = std::copy(text, text + std::strlen(text), at);
      }
    }
    *at++ = '\n';
    out.append(row, at);
  }
}
}  // namespace

void append_catalog_csv_rows(const Catalog& catalog, size_t begin, size_t end, const PhotometryTable* photometry,
                             std::string& out) {
  append_rows(detail::catalog_output_columns(photometry), catalog, begin, end, photometry, out);
}

std::string catalog_csv(const Catalog& catalog, const PhotometryTable* photometry) {
  const std::vector<detail::OutputColumn> columns = detail::catalog_output_columns(photometry);
  std::string out = csv_header(columns);
  append_rows(columns, catalog, 0, catalog.size(), photometry, out);
  return out;
}

void write_catalog_csv(const std::filesystem::path& path, const Catalog& catalog, const PhotometryTable* photometry) {
  const std::vector<detail::OutputColumn> columns = detail::catalog_output_columns(photometry);
  forget_written_text();  // the kept buffer below changes
  thread_local std::string text;
  AtomicOutput output(path);
  bool whole = false;
  {
    std::ofstream stream(output.temp_path(), std::ios::binary);
    const std::string header = csv_header(columns);
    const size_t blocks = (catalog.size() + kCatalogBlockRows - 1) / kCatalogBlockRows;
    if (blocks <= 1) {
      // One block: formatted into this thread's buffer, kept from catalog to catalog (a fresh one
      // of ~1.5 MB costs its page faults every image), and written at once.
      whole = true;
      text.assign(header);
      append_rows(columns, catalog, 0, catalog.size(), photometry, text);
      stream.write(text.data(), static_cast<std::streamsize>(text.size()));
    } else {
      stream.write(header.data(), static_cast<std::streamsize>(header.size()));
      detail::for_blocks_in_order<std::string>(
          blocks,
          [&](size_t b) {
            const size_t begin = b * kCatalogBlockRows, end = std::min(catalog.size(), begin + kCatalogBlockRows);
            std::string text;
            append_rows(columns, catalog, begin, end, photometry, text);
            return text;
          },
          [&](const std::string& text) {
            if (stream) stream.write(text.data(), static_cast<std::streamsize>(text.size()));
          });
    }
    stream.flush();
    if (!stream) throw OutputError(path.string() + ": write failed: " + std::strerror(errno));
  }
  output.commit();
  if (whole) note_written_text(path, text);  // the item's manifest CRC and merged rows read it
}

}  // namespace imflow
