// The registered input formats (FITS; other formats add one entry each) and name helpers.
#include <algorithm>
#include <cstring>
#include <cctype>
#include <utility>

#include "imflow/io/input_format.hpp"
#include "mri_formats.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::vector<PlaneInfo> scan_fits_planes(const fs::path& path) {
  std::vector<PlaneInfo> planes;
  for (const FitsImageInfo& image : scan_fits(path)) {
    if (!image.error.empty()) {
      planes.push_back({image.hdu, 0, 1, image.width(), image.height(), 0, image.extname, image.error});
      continue;
    }
    for (int64_t p = 0; p < image.planes(); ++p) {
      planes.push_back({image.hdu, p, image.planes(), image.width(), image.height(), 0, image.extname, ""});
    }
  }
  return planes;
}

int64_t read_fits(const ItemRef& ref, ImageBuffer& out, const ReadLimits& limits) {
  if (ref.tile >= 0) return read_fits_region(ref.path, ref.hdu, ref.plane, ref.halo, out, limits);  // docs/tiling.md
  return read_fits_plane(ref.path, ref.hdu, ref.plane, out, limits);
}

// FITS: uncompressed, tile-compressed (fpack .fz) and whole-file compressed (gzip, Unix compress,
// bzip2 as SDSS ships its frames) names that CFITSIO opens.
constexpr std::string_view kFitsSuffixes[] = {".fits", ".fit", ".fts", ".fits.fz", ".fits.gz", ".fit.gz", ".fts.gz",
                                              ".fz", ".fits.z", ".fits.bz2", ".fit.bz2", ".fts.bz2", ".mt"};
constexpr std::string_view kPngSuffixes[] = {".png"};
// NIfTI single files, and the .hdr of .hdr/.img pairs (NIfTI-1 "ni1", Analyze 7.5).
constexpr std::string_view kNiftiSuffixes[] = {".nii", ".nii.gz", ".hdr", ".hdr.gz"};

const InputFormat kInputFormats[] = {
    {"fits", kFitsSuffixes, scan_fits_planes, read_fits},
    {"png", kPngSuffixes, scan_png_planes, read_png_plane},
    {"nifti", kNiftiSuffixes, scan_nifti_planes, read_nifti_plane, nifti_data_files},
};

// Whether the lower-case file name `name` ends with `suffix` after a non-empty stem.
bool lower_name_ends_with(std::string_view name, std::string_view suffix) {
  return name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
}

// The longest registered suffix that `filename` ends with (after a non-empty stem), and its format.
std::pair<const InputFormat*, size_t> longest_suffix(const fs::path& filename) {
  const std::string name = lower(filename.filename().string());
  std::pair<const InputFormat*, size_t> best{nullptr, 0};
  for (const InputFormat& format : kInputFormats) {
    for (std::string_view suffix : format.suffixes) {
      if (suffix.size() > best.second && lower_name_ends_with(name, suffix)) best = {&format, suffix.size()};
    }
  }
  return best;
}
}  // namespace

bool name_ends_with(const fs::path& path, std::string_view suffix) {
  return lower_name_ends_with(lower(path.filename().string()), suffix);
}

const InputFormat* input_format_for(const fs::path& path) { return longest_suffix(path.filename()).first; }

bool is_fits_input(const fs::path& path) {
  const InputFormat* format = input_format_for(path);
  return format != nullptr && std::strcmp(format->name, "fits") == 0;
}

bool whole_file_compressed(const fs::path& path) {
  return name_ends_with(path, ".gz") || name_ends_with(path, ".z") || name_ends_with(path, ".zip") ||
         name_ends_with(path, ".bz2");
}

std::vector<std::string> default_input_patterns() {
  std::vector<std::string> patterns;
  for (const InputFormat& format : kInputFormats) {
    for (std::string_view suffix : format.suffixes) patterns.emplace_back("*").append(suffix);
  }
  return patterns;
}

std::string strip_image_extension(const std::string& filename) {
  return filename.substr(0, filename.size() - longest_suffix(fs::path(filename)).second);
}

std::string normalized_extname(std::string name) {
  while (!name.empty() && name.back() == ' ') name.pop_back();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return name;
}

std::string output_name(const std::string& filename, int hdu, int64_t plane, int64_t planes) {
  std::string name = strip_image_extension(filename);
  if (hdu > 0) name += ".hdu" + std::to_string(hdu);
  if (planes > 1) name += ".p" + std::to_string(plane);
  return name;
}

}  // namespace imflow
