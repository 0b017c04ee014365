// Input formats: how a file is listed as work items (planes) and how one plane is read.
// Formats are chosen by file-name suffix; add a format with one entry in src/io/input_formats.cpp
// (its suffixes also give the default input patterns and the output names).
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

// One 2-D plane of a file, as listed by a format's scan.
struct PlaneInfo {
  int hdu = 0;          // FITS HDU (0 for formats without HDUs)
  int64_t plane = 0;    // plane of a cube / slice of a volume
  int64_t planes = 1;   // planes in that HDU / volume
  int64_t width = 0;
  int64_t height = 0;
  int bit_depth = 0;    // integer sample depth as stored (8, 16), 0 for float/other (ItemRef::bit_depth)
  std::string extname;  // FITS EXTNAME of the HDU (empty when absent or not FITS)
  std::string error;    // set: this HDU cannot be read (the reason, naming the file); its item fails
};

struct InputFormat {
  const char* name;
  std::span<const std::string_view> suffixes;  // lower case, e.g. ".fits.fz"; matched ignoring case
  std::vector<PlaneInfo> (*scan)(const std::filesystem::path& path);
  // Read one plane into `out`; returns the bytes the plane occupies as stored.
  int64_t (*read)(const ItemRef& ref, ImageBuffer& out, const ReadLimits& limits);
  // The other files the planes are read from (the .img of a .hdr/.img pair), which --resume
  // fingerprints with the listed file; nullptr: none.
  std::vector<std::filesystem::path> (*data_files)(const std::filesystem::path& path) = nullptr;
};

// The format for a path (by suffix, ignoring case), or nullptr when none claims it.
const InputFormat* input_format_for(const std::filesystem::path& path);

// The path is one the FITS reader claims (its suffixes, compressed ones included).
bool is_fits_input(const std::filesystem::path& path);

// gzip, Unix compress, zip or bzip2 by name (any case): CFITSIO inflates such a file whole into
// memory on open, so it is neither read directly nor in tiles.
bool whole_file_compressed(const std::filesystem::path& path);

// "*" + every registered suffix: input.patterns when the pipeline names none.
std::vector<std::string> default_input_patterns();

// Whether the file name of `path` ends with `suffix` (lower case) after a non-empty stem,
// ignoring case: "X.NII.GZ" ends with ".nii.gz"; ".png" alone does not end with ".png".
bool name_ends_with(const std::filesystem::path& path, std::string_view suffix);

// "name.fits.fz" -> "name": the file name without its longest registered suffix (unchanged when none).
std::string strip_image_extension(const std::string& filename);

// The name an item's outputs start with: strip_image_extension(filename), then ".hduH" for an
// HDU after the primary and ".pP" for a plane of a cube or volume ("m.fits", HDU 1 -> "m.hdu1").
std::string output_name(const std::string& filename, int hdu, int64_t plane, int64_t planes);

// An EXTNAME as compared: upper case, trailing blanks dropped (FITS pads strings; case varies).
std::string normalized_extname(std::string name);

}  // namespace imflow
