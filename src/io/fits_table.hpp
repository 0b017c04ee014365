// A catalog as one binary table HDU of a FITS file being written: one column per OutputColumn
// (TTYPE with its description as the comment, TFORM, TUNIT), the rows encoded big-endian in blocks.
#pragma once
#include <fitsio.h>

#include <filesystem>
#include <vector>

#include "catalog_output.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/source.hpp"

namespace imflow::detail {

// Appends the table HDU EXTNAME `extname` with `cards` in its header; a column of several values
// (repeat > 1) is a vector, TFORM nD, as SExtractor writes FLUX_APER. `photometry`: the sources'
// rows, or nullptr. Throws OutputError naming `path`.
void write_catalog_table(fitsfile* file, const std::filesystem::path& path, const char* extname, const Catalog& catalog,
                         const PhotometryTable* photometry, const std::vector<OutputColumn>& columns,
                         const std::vector<FitsCard>& cards);

}  // namespace imflow::detail
