// Catalogs as CSV text (the FITS table writer is in io/fits.hpp).
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>

#include "imflow/source.hpp"

namespace imflow {

// Rows per block of the catalog writers (CSV and FITS table): a larger catalog is formatted in
// blocks on all threads and written in order.
inline constexpr size_t kCatalogBlockRows = 8192;

// The whole CSV text: a header row of column names, then one row per source.
std::string catalog_csv(const Catalog& catalog);
// The rows of sources [first, last) as catalog_csv writes them (no header), appended to `out`.
void append_catalog_csv_rows(const Source* first, const Source* last, std::string& out);
// The same bytes as catalog_csv, written atomically; a large catalog is formatted in blocks on
// all threads of the arena and streamed in order (never held whole as text). Throws OutputError.
void write_catalog_csv(const std::filesystem::path& path, const Catalog& catalog);

}  // namespace imflow
