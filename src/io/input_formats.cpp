// The registered input formats (FITS; other formats add one entry each) and name helpers.
#include <algorithm>
#include <array>
#include <cctype>

#include "imflow/io/input_format.hpp"
#include "mri_formats.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

const std::array<const char*, 10> kFitsSuffixes = {".fits", ".fit", ".fts", ".fits.fz", ".fits.gz", ".fit.gz",
                                                   ".fts.gz", ".fz", ".mt", ".fits.z"};

bool is_fits(const fs::path& path) {
  const std::string name = lower(path.filename().string());
  return std::any_of(kFitsSuffixes.begin(), kFitsSuffixes.end(), [&](const char* s) { return ends_with(name, s); });
}

std::vector<PlaneInfo> scan_fits_planes(const fs::path& path) {
  std::vector<PlaneInfo> planes;
  for (const FitsImageInfo& image : scan_fits(path)) {
    for (int64_t p = 0; p < image.planes(); ++p) {
      planes.push_back({image.hdu, p, image.planes(), image.width(), image.height(), 0, image.extname});
    }
  }
  return planes;
}

int64_t read_fits(const ItemRef& ref, ImageBuffer& out, const ReadLimits& limits) {
  if (ref.tile >= 0) return read_fits_region(ref.path, ref.hdu, ref.plane, ref.halo, out, limits);  // docs/tiling.md
  return read_fits_plane(ref.path, ref.hdu, ref.plane, out, limits);
}

const InputFormat kFormats[] = {
    {"fits", is_fits, scan_fits_planes, read_fits},
    {"png", is_png_path, scan_png_planes, read_png_plane},
    {"nifti", is_nifti_path, scan_nifti_planes, read_nifti_plane},
};
}  // namespace

bool name_ends_with(const fs::path& path, std::string_view suffix) {
  const std::string name = lower(path.filename().string());
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

const InputFormat* input_format_for(const fs::path& path) {
  for (const InputFormat& format : kFormats) {
    if (format.matches(path)) return &format;
  }
  return nullptr;
}

std::string strip_image_extension(const std::string& filename) {
  static const std::array<const char*, 16> suffixes = {".fits.fz", ".fits.gz", ".fit.gz", ".fts.gz", ".nii.gz",
                                                       ".hdr.gz",  ".fits",    ".fit",    ".fts",    ".fz",
                                                       ".nii",     ".hdr",     ".png",    ".mt",     ".gz",
                                                       ".fits.z"};
  const std::string name = lower(filename);
  for (const char* suffix : suffixes) {
    if (ends_with(name, suffix) && name.size() > std::string(suffix).size()) {
      return filename.substr(0, filename.size() - std::string(suffix).size());
    }
  }
  return filename;
}

}  // namespace imflow
