// Writing an item's outputs (catalogs, label maps, background-subtracted images) under the
// output directory, mirroring the input's relative path.
#pragma once
#include <filesystem>
#include <vector>

#include "imflow/io/fits.hpp"
#include "imflow/pipeline.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

// out/<relative dir>/<name>[.hduH][.pP]: the common prefix of an item's output files. Throws
// OutputError when ref.relative is absolute or has '..'/'.' parts (it could leave output_dir).
std::filesystem::path output_stem(const ItemRef& ref, const std::filesystem::path& output_dir);

// Throws OutputError when a directory between output_dir and stem exists as a symlink or a file.
void check_output_parents(const std::filesystem::path& stem, const std::filesystem::path& output_dir);

// The provenance header cards of an item's FITS outputs (origin, source file/HDU/plane, background, threshold).
std::vector<FitsCard> provenance_cards(const WorkItem& item);

// Write what the item holds and the output formats ask for; returns the files written.
// Throws OutputError; files already written stay complete (each write is atomic).
std::vector<std::filesystem::path> write_outputs(const WorkItem& item, const OutputConfig& output);

// The catalog files `output` asks for (stem.cat.csv, stem.cat.fits), their paths appended to
// `written`; a catalog of more than one block writes both files at once. Throws OutputError.
void write_catalog_files(const std::filesystem::path& stem, const Catalog& catalog, const std::vector<FitsCard>& cards,
                         const OutputConfig& output, std::vector<std::filesystem::path>& written);

}  // namespace imflow
