// Catalogs as CSV (header row of column names; full float64 precision, float columns' whole
// numbers with ".0"; NaN and +-Infinity spelled so that Python and Java readers both parse them).
// Large catalogs are formatted in blocks of rows on all threads and written in order (a mosaic's
// copied into the file on all threads once their offsets are known): the same bytes as one string.
// Rows the GPU wrote as text (imflow/catalog_text.hpp) are copied, with ra, dec and errtheta put in.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "catalog_output.hpp"
#include "copied_blocks.hpp"
#include "imflow/catalog_text.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/catalog.hpp"
#include "imflow/io/concurrent_file_writer.hpp"
#include "imflow/io/written_text.hpp"
#include "imflow/kernels/csv_row_text.hpp"
#include "ordered_blocks.hpp"
#include "shortest_double.hpp"

namespace imflow {

namespace {
// Catalogs of this many blocks or more (a mosaic's) are copied into the file on all threads: one
// thread writing hundreds of megabytes would hold the whole image up. Smaller ones are written in
// order by one thread, which costs less CPU per byte (ConcurrentFileWriter).
constexpr size_t kCopiedBlocks = 16;

std::string csv_header(const std::vector<detail::OutputColumn>& columns) {
  std::string out;
  for (size_t c = 0; c < columns.size(); ++c) {
    if (c) out += ',';
    out += columns[c].name;
  }
  out += '\n';
  return out;
}

// The shortest text that reads back to the same double (detail::write_shortest, the same text
// as std::to_chars), ".0" after a whole number's digits (kernels::csv_whole_number), or the CSV's
// spelling of NaN and +-Infinity.
char* write_double(char* at, double value) {
  if (std::isfinite(value)) {
    char* const end = detail::write_shortest(at, value);
    if (std::trunc(value) != value || std::find(at, end, 'e') != end) return end;
    std::memcpy(end, ".0", 2);
    return end + 2;
  }
  const char* text = kernels::csv_non_finite_text(value);
  return std::copy(text, text + std::strlen(text), at);
}

void append_rows(const std::vector<detail::OutputColumn>& columns, const Catalog& catalog, size_t begin, size_t end,
                 const PhotometryTable* photometry, std::string& out) {
  // ~12.5 characters a column on average: one allocation for most blocks, no copy on growth.
  out.reserve(out.size() + (end - begin) * columns.size() * 14);
  const double zeropoint = photometry && photometry->zeropoint ? *photometry->zeropoint : 0.0;
  // A row is at most 25 characters a column, built in `row` (with the room write_shortest may
  // write past a number) and appended once.
  std::vector<char> buffer(columns.size() * 26 + detail::kShortestDoubleChars + 1);
  char* const row = buffer.data();
  char* const row_end = row + buffer.size();
  const size_t fixed = detail::leading_fixed_columns(columns);
  for (size_t i = begin; i < end; ++i) {
    const Source& source = catalog[i];
    const double* values = photometry ? photometry->row(i) : nullptr;
    char* at = row;
    if (fixed != 0) {
      detail::for_each_fixed_column(source, [&](auto index, double value) {
        constexpr detail::CatalogColumn column = detail::kCatalogColumns[index];
        if constexpr (index != 0) *at++ = ',';
        if constexpr (column.integer()) at = std::to_chars(at, row_end, static_cast<long long>(value)).ptr;
        else at = write_double(at, value);
      });
    }
    for (size_t c = fixed; c < columns.size(); ++c) {
      if (c) *at++ = ',';
      const double value = detail::column_value(columns[c], source, values, zeropoint, 0);
      at = columns[c].integer() ? std::to_chars(at, row_end, static_cast<long long>(value)).ptr
                                : write_double(at, value);
    }
    *at++ = '\n';
    out.append(row, at);
  }
}
// Rows [begin, end) from the device's text: each copied in three runs around ra, dec and errtheta.
void append_device_rows(const CatalogCsvText& device, const Catalog& catalog, size_t begin, size_t end,
                        std::string& out) {
  if (begin == end) return;
  out.reserve(out.size() + device.end(end - 1) - device.start(begin) + (end - begin) * 3 * detail::kShortestDoubleChars);
  char numbers[3 * detail::kShortestDoubleChars];
  for (size_t i = begin; i < end; ++i) {
    const Source& source = catalog[i];
    const char* const row = device.text().data() + device.start(i);
    const char* const dec_at = row + device.ra_at(i) + 1;
    const char* const errtheta_at = row + device.errtheta_at(i);
    out.append(row, dec_at - 1);
    char* at = write_double(numbers, source.ra);
    *at++ = ',';
    at = write_double(at, source.dec);
    out.append(numbers, at);
    out.append(dec_at, errtheta_at);
    out.append(numbers, write_double(numbers, detail::error_angle(source)));
    out.append(errtheta_at, device.text().data() + device.end(i));
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

void write_catalog_csv(const std::filesystem::path& path, const Catalog& catalog, const PhotometryTable* photometry,
                       const CatalogCsvText* device_text) {
  const std::vector<detail::OutputColumn> columns = detail::catalog_output_columns(photometry);
  // The device's text has the fixed columns only, a row per source.
  if (photometry != nullptr || (device_text != nullptr && device_text->rows.size() != catalog.size())) device_text = nullptr;
  const auto append = [&](size_t begin, size_t end, std::string& out) {
    if (device_text != nullptr) append_device_rows(*device_text, catalog, begin, end, out);
    else append_rows(columns, catalog, begin, end, photometry, out);
  };
  const auto format_block = [&](size_t b) {
    const size_t begin = b * kCatalogBlockRows, end = std::min(catalog.size(), begin + kCatalogBlockRows);
    std::string text;
    append(begin, end, text);
    return text;
  };
  thread_local std::string text;
  forget_written_text(text.data());  // the kept buffer below changes
  AtomicFileWriter output(path);
  const std::string header = csv_header(columns);
  const size_t blocks = (catalog.size() + kCatalogBlockRows - 1) / kCatalogBlockRows;
  const bool whole = blocks <= 1;
  detail::CopiedBytes copied;
  if (whole) {
    // One block: formatted into this thread's buffer, kept from catalog to catalog (a fresh one
    // of ~1.5 MB costs its page faults every image), and written at once.
    text.assign(header);
    append(0, catalog.size(), text);
    output.write(text);
  } else if (blocks < kCopiedBlocks) {
    output.write(header);
    detail::for_blocks_in_order<std::string>(blocks, format_block, [&](const std::string& text) { output.write(text); });
  } else {
    // Given their offsets in order, the blocks are copied into the file on all threads; each
    // block's CRC, taken as it is made, joins the file's in order (the manifest's, noted below).
    output.write(header);
    ConcurrentFileWriter file(output.descriptor());
    copied = detail::copy_blocks_in_order<std::string>(file, path, blocks, {header.size(), crc32_update(0, header)},
                                                       format_block);
  }
  output.commit();
  if (whole) note_written_text(path, text);  // the item's manifest CRC and merged rows read it
  if (blocks >= kCopiedBlocks) note_written_crc(path, {copied.end, copied.crc32});
}

}  // namespace imflow
