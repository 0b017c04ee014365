// Companion images (include/imflow/io/companion.hpp): the naming rule, locating the HDU and plane,
// reading it through the input formats with its size checked, and leaving companions out of the
// list of images.
#include "imflow/io/companion.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "imflow/errors.hpp"
#include "imflow/io/input_format.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
constexpr std::string_view kStem = "{stem}";

std::string place_name(const fs::path& path, int hdu, int64_t plane, int64_t planes) {
  std::string name = path.string();
  if (hdu > 0) name += "[hdu " + std::to_string(hdu) + "]";
  if (planes > 1) name += "[plane " + std::to_string(plane) + "]";
  return name;
}

std::string image_name(const ItemRef& ref) { return place_name(ref.path, ref.hdu, ref.plane, ref.planes); }

std::vector<PlaneInfo> scan_companion(const ItemRef& ref, const CompanionSpec& spec, const fs::path& path) {
  const InputFormat* format = input_format_for(path);
  if (format == nullptr) {
    throw InputError(image_name(ref) + ": its " + spec.role + " " + path.string() + " is not in a format imflow reads");
  }
  try {
    return format->scan(path);
  } catch (const std::exception& error) {
    throw InputError(image_name(ref) + ": its " + spec.role + " cannot be read: " + error.what());
  }
}

// The plane of a companion file: the image's own HDU and plane when the file has them, else its
// only plane.
CompanionPlace plane_in_file(const ItemRef& ref, const CompanionSpec& spec, const fs::path& path) {
  const std::vector<PlaneInfo> planes = scan_companion(ref, spec, path);
  for (const PlaneInfo& p : planes) {
    if (p.hdu == ref.hdu && p.plane == ref.plane) return {path, p.hdu, p.plane};
  }
  if (planes.size() == 1) return {path, planes[0].hdu, planes[0].plane};
  throw InputError(image_name(ref) + ": its " + spec.role + " " + path.string() + " has no HDU " +
                   std::to_string(ref.hdu) + " plane " + std::to_string(ref.plane) + " and more than one plane");
}

// The HDU of the image's own file named spec.image that pairs with the image's HDU.
CompanionPlace plane_in_extension(const ItemRef& ref, const CompanionSpec& spec) {
  const std::vector<PlaneInfo> planes = scan_companion(ref, spec, ref.path);
  const std::string own = normalized_extname(ref.extname), wanted = normalized_extname(spec.image);
  int64_t rank = 0;
  for (const PlaneInfo& p : planes) {
    if (p.plane != 0) continue;
    if (p.hdu == ref.hdu) break;
    if (normalized_extname(p.extname) == own) ++rank;
  }
  int64_t seen = 0;
  for (const PlaneInfo& p : planes) {
    if (p.plane != 0 || normalized_extname(p.extname) != wanted) continue;
    if (seen++ < rank) continue;
    return {ref.path, p.hdu, p.planes > ref.plane ? ref.plane : 0};
  }
  throw InputError(image_name(ref) + ": its " + spec.role + " (EXTNAME " + wanted + ") is not in the file" +
                   (rank > 0 ? " (wanted the " + std::to_string(rank + 1) + "th " + wanted + " HDU, for " +
                                   (own.empty() ? "this HDU" : "the " + std::to_string(rank + 1) + "th " + own) + ")"
                             : ""));
}
}  // namespace

bool CompanionSpec::names_extension() const {
  return !image.empty() && image.find(kStem) == std::string::npos && image.find('.') == std::string::npos &&
         image.find('/') == std::string::npos;
}

fs::path companion_file(const fs::path& image, const CompanionSpec& spec) {
  std::string name = spec.image;
  const std::string stem = strip_image_extension(image.filename().string());
  for (size_t at = name.find(kStem); at != std::string::npos; at = name.find(kStem, at + stem.size())) {
    name.replace(at, kStem.size(), stem);
  }
  const fs::path path(name);
  return path.is_absolute() ? path : image.parent_path() / path;
}

fs::path companion_path(const ItemRef& ref, const CompanionSpec& spec) {
  if (spec.names_extension()) return ref.path;
  return spec.tree.empty() ? companion_file(ref.path, spec) : spec.tree / ref.relative;
}

CompanionPlace locate_companion(const ItemRef& ref, const CompanionSpec& spec) {
  if (spec.names_extension()) return plane_in_extension(ref, spec);
  const fs::path path = companion_path(ref, spec);
  std::error_code error;
  if (!fs::is_regular_file(path, error)) {
    throw InputError(image_name(ref) + ": its " + spec.role + " " + path.string() +
                     (fs::exists(path, error) ? " is not a regular file" : " does not exist") +
                     (spec.tree.empty() ? " (image: '" + spec.image + "')" : " (the same path under " + spec.tree.string() + ")"));
  }
  return plane_in_file(ref, spec, path);
}

void read_companion(const ItemRef& ref, const CompanionSpec& spec, int64_t width, int64_t height, ImageBuffer& out,
                    const ReadLimits& limits) {
  const CompanionPlace place = locate_companion(ref, spec);
  ItemRef companion;
  companion.path = place.path;
  companion.hdu = place.hdu;
  companion.plane = place.plane;
  const std::string name = place_name(place.path, place.hdu, 0, 1);
  try {
    input_format_for(place.path)->read(companion, out, limits);
  } catch (const std::exception& error) {
    throw InputError(image_name(ref) + ": its " + spec.role + " " + name + " cannot be read: " + error.what());
  }
  if (out.width() != width || out.height() != height) {
    throw InputError(image_name(ref) + ": its " + spec.role + " " + name + " is " + std::to_string(out.width()) + "x" +
                     std::to_string(out.height()) + " pixels, the image " + std::to_string(width) + "x" +
                     std::to_string(height));
  }
}

std::vector<fs::path> without_companion_files(std::vector<fs::path> files, const std::vector<CompanionSpec>& specs) {
  std::set<fs::path> companions;
  for (const CompanionSpec& spec : specs) {
    if (spec.image.empty() || spec.names_extension()) continue;
    for (const fs::path& file : files) {
      const fs::path companion = companion_file(file, spec).lexically_normal();
      if (companion != file.lexically_normal()) companions.insert(companion);
    }
  }
  if (companions.empty()) return files;
  std::erase_if(files, [&](const fs::path& file) { return companions.count(file.lexically_normal()) > 0; });
  return files;
}

}  // namespace imflow
