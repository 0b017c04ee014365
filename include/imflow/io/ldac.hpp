// Catalogs in SExtractor's FITS_LDAC layout, the one SCAMP and PSFEx read: an empty primary HDU,
// LDAC_IMHEAD (one row holding the image's header as text) and LDAC_OBJECTS (the sources under
// SExtractor's column names: src/io/ldac_columns.hpp).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "imflow/io/fits.hpp"
#include "imflow/source.hpp"

namespace imflow {

// The image header LDAC_IMHEAD holds, as 80-character records ending with END: SIMPLE, BITPIX
// (the input's, else -32), NAXIS = 2 and NAXIS1/NAXIS2 (width/height when > 0, else the
// input's), then the input's other records (`image_records`, empty for non-FITS inputs) less the
// structural ones. For a plane of a cube (`cube_plane`) the input's WCS keywords are replaced by
// `plane_wcs_records` (the plane's 2-D WCS, ImageWcs::image_records).
std::vector<std::string> ldac_image_header(const std::vector<std::string>& image_records, int64_t width, int64_t height,
                                           bool cube_plane, const std::vector<std::string>& plane_wcs_records);

// SExtractor's extraction keywords in LDAC_IMHEAD (PSFEx requires SEXBKDEV and SEXGAIN there):
// SEXBKGND, SEXBKDEV the background's level and rms, SEXTHLD the detection threshold (ADU),
// SEXGAIN the gain (e-/ADU, 0 for none). Inserted before `header`'s END; missing or non-finite
// values are left out.
struct LdacExtraction {
  std::optional<double> background, rms, threshold, gain;
};
void add_ldac_extraction_keywords(std::vector<std::string>& header, const LdacExtraction& extraction);

// Write the FITS_LDAC file atomically; `cards` (provenance) go into LDAC_OBJECTS' header;
// `photometry` adds its SExtractor columns (FLUX_AUTO, FLUX_APER, ...). Throws OutputError naming the file.
void write_catalog_ldac(const std::filesystem::path& path, const Catalog& catalog,
                        const std::vector<std::string>& image_header, const std::vector<FitsCard>& cards,
                        const PhotometryTable* photometry = nullptr);

// One FITS_LDAC file from several (a multi-extension image's HDUs): their LDAC_IMHEAD and
// LDAC_OBJECTS pairs in the given order, written atomically. Throws OutputError naming the file.
void merge_ldac_files(const std::vector<std::filesystem::path>& parts, const std::filesystem::path& path);

}  // namespace imflow
