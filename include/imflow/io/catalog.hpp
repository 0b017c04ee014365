// Catalogs as CSV text (the FITS table writer is in io/fits.hpp).
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>

#include "imflow/catalog_text.hpp"
#include "imflow/photometry.hpp"
#include "imflow/source.hpp"

namespace imflow {

// Rows per block of the catalog writers (CSV and FITS table): a larger catalog is formatted in
// blocks on all threads and written in order.
inline constexpr size_t kCatalogBlockRows = 8192;

// The whole CSV text: a header row of column names, then one row per source; `photometry` (a row
// per source, or nullptr) adds the measure step's photometry columns (docs/astronomy.md).
std::string catalog_csv(const Catalog& catalog, const PhotometryTable* photometry = nullptr);
// The rows of sources [begin, end) as catalog_csv writes them (no header), appended to `out`.
void append_catalog_csv_rows(const Catalog& catalog, size_t begin, size_t end, const PhotometryTable* photometry,
                             std::string& out);
// The same bytes as catalog_csv, written atomically; a large catalog is formatted in blocks on
// all threads of the arena and streamed in order (never held whole as text). `device_text`, the
// rows the GPU wrote (used without photometry, when it has a row per source), is copied instead of
// formatting them again. Throws OutputError.
void write_catalog_csv(const std::filesystem::path& path, const Catalog& catalog,
                       const PhotometryTable* photometry = nullptr, const CatalogCsvText* device_text = nullptr);

}  // namespace imflow
