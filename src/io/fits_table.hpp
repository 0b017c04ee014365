// A catalog as one binary table HDU of a FITS file being written: one column per OutputColumn
// (TTYPE with its description as the comment, TFORM, TUNIT), the rows encoded big-endian in blocks.
#pragma once
#include <fitsio.h>

#include <cstddef>
#include <filesystem>
#include <vector>

#include "catalog_output.hpp"
#include "fits_output.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/source.hpp"

namespace imflow::detail {

// Catalog tables of up to this many bytes of rows (~14,500 rows of the 36 default columns) are
// built in memory and written whole (MemoryFitsOutput: CFITSIO makes the headers, the rows are
// encoded straight after them); larger ones' rows (a mosaic's) are encoded in blocks on all
// threads and copied into the file after the headers. Each writing thread keeps a buffer of its
// largest such table: 4 MiB at most, so a run's memory stays within its budget however many
// threads it has (docs/pipeline.md).
inline constexpr size_t kMemoryTableMaxBytes = size_t{4} << 20;
// The bytes of one row of `columns` as the table stores it.
size_t table_row_bytes(const std::vector<OutputColumn>& columns);
inline bool table_fits_in_memory(size_t rows, const std::vector<OutputColumn>& columns) {
  return rows * table_row_bytes(columns) <= kMemoryTableMaxBytes;
}

// Appends the table HDU EXTNAME `extname` with `cards` in its header; a column of several values
// (repeat > 1) is a vector, TFORM nD, as SExtractor writes FLUX_APER. `photometry`: the sources'
// rows, or nullptr. With `last_rows` (the file's last HDU, built in memory: write_fits_file) the
// table is made with no rows and its rows are left to `last_rows`, which keeps references to
// `catalog`, `photometry` and `columns`. Throws OutputError naming `path`.
void write_catalog_table(fitsfile* file, const std::filesystem::path& path, const char* extname, const Catalog& catalog,
                         const PhotometryTable* photometry, const std::vector<OutputColumn>& columns,
                         const std::vector<FitsCard>& cards, LastTableRows* last_rows = nullptr);

}  // namespace imflow::detail
