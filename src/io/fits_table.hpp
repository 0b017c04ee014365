// A catalog as one binary table HDU of a FITS file being written: one column per CatalogColumn
// (TTYPE with its description as the comment, TFORM, TUNIT), the rows encoded big-endian in blocks.
#pragma once
#include <fitsio.h>

#include <filesystem>
#include <span>
#include <vector>

#include "catalog_columns.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/source.hpp"

namespace imflow::detail {

// Appends the table HDU EXTNAME `extname` with `cards` in its header; throws OutputError naming `path`.
void write_catalog_table(fitsfile* file, const std::filesystem::path& path, const char* extname, const Catalog& catalog,
                         std::span<const CatalogColumn> columns, const std::vector<FitsCard>& cards);

}  // namespace imflow::detail
