// Writing an item's outputs (catalogs, label maps, background-subtracted images) under the
// output directory, mirroring the input's relative path.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "imflow/io/fits.hpp"
#include "imflow/io/wcs.hpp"
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

// The input plane's WCS (FITS inputs) when the outputs use it: catalogs (sky positions) or FITS
// images (its records in their headers); otherwise, or without one, an empty ImageWcs. Parsed
// from `header_records` (the read's, WorkItem::fits_header) when given and not empty, else from
// the file. A WCS that WCSLIB rejects is logged as a warning naming the item.
ImageWcs output_wcs(const ItemRef& ref, bool has_catalog, const OutputConfig& output,
                    const std::vector<std::string>* header_records = nullptr);

// Provenance cards followed by the WCS records: the header of an image output of the plane.
std::vector<FitsCard> image_cards(const WorkItem& item, const ImageWcs& wcs);

// Write what the item holds and the output formats ask for; returns the files written. The
// catalog's sources get their sky positions first (ImageWcs::set_sky_positions).
// Throws OutputError, after removing the item's files this call had finished: an item has all its
// outputs or none (each file is written atomically, so none is ever half-written).
std::vector<std::filesystem::path> write_outputs(WorkItem& item, const OutputConfig& output);

// Remove an item's finished outputs (after one of its later outputs failed); errors are ignored.
void remove_outputs(const std::vector<std::filesystem::path>& written);

// The catalog files `output` asks for (stem.cat.csv, stem.cat.fits, stem.ldac with the image
// header `ldac_header` makes) with the photometry columns of `photometry` (or nullptr), the paths
// of those finished appended to `written` (also when another fails); a catalog of more than one
// block writes its files at once. Throws OutputError.
void write_catalog_files(const std::filesystem::path& stem, const Catalog& catalog, const PhotometryTable* photometry,
                         const std::vector<FitsCard>& cards, const OutputConfig& output,
                         std::vector<std::filesystem::path>& written,
                         const std::function<std::vector<std::string>()>& ldac_header,
                         const CatalogCsvText* device_csv = nullptr);

// Sky positions from `wcs` into the catalog, then write_catalog_files with the item's provenance,
// the ra/dec frame cards, the item's photometry and the CSV rows the GPU wrote (item.catalog_csv).
void write_item_catalog(const std::filesystem::path& stem, const WorkItem& item, Catalog& catalog, const ImageWcs& wcs,
                        const OutputConfig& output, std::vector<std::filesystem::path>& written);

}  // namespace imflow
