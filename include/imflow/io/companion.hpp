// Companion images of an input image (a weight map, and later flag maps, masks and the detection
// image of dual-image mode): where one is found, by the naming rule of docs/pipeline.md, and
// reading it with its size checked against the image's.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "imflow/image.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

// How to find a companion. `image` is either a file name pattern (it holds '{stem}', '.' or '/'):
// '{stem}' stands for the image's file name without its image extension ("x" for x.fits or
// x.fits.fz), a relative name is taken beside the image; or else an EXTNAME of the image's own
// file (HST's ERR, WHT, DQ): the n-th HDU with that EXTNAME pairs with the n-th HDU that has the
// image's EXTNAME (EXTVER order as HST writes them).
struct CompanionSpec {
  std::string role;   // what it is, for messages: "weight map"
  std::string image;  // empty: no companion
  // Set instead of `image`: a directory mirroring the input tree (--detect DIR), the companion of
  // IN/a/b.fits being tree/a/b.fits.
  std::filesystem::path tree{};
  bool present() const { return !image.empty() || !tree.empty(); }
  bool names_extension() const;
};

// Where a companion plane is: a file, an HDU in it and a plane of that HDU.
struct CompanionPlace {
  std::filesystem::path path;
  int hdu = 0;
  int64_t plane = 0;
};

// The companion file of `image` for a file pattern (spec.image set, spec.names_extension() false).
std::filesystem::path companion_file(const std::filesystem::path& image, const CompanionSpec& spec);

// The file holding the companion of item `ref`: by the file pattern or under spec.tree, or the
// image's own file when spec.image is an EXTNAME. Reads nothing.
std::filesystem::path companion_path(const ItemRef& ref, const CompanionSpec& spec);

// Where the companion of item `ref` is. Throws InputError naming the image, the companion and
// why: the file is missing or unreadable, it has no matching HDU or plane.
CompanionPlace locate_companion(const ItemRef& ref, const CompanionSpec& spec);

// Read the companion of `ref` (an image of width x height) into `out`. Throws InputError naming
// both files when the companion cannot be found or read, or has another size.
void read_companion(const ItemRef& ref, const CompanionSpec& spec, int64_t width, int64_t height, ImageBuffer& out,
                    const ReadLimits& limits);

// `files` less every file that is the companion (by a file pattern) of another listed file, so
// that x.weight.fits beside x.fits is not processed as an image of its own.
std::vector<std::filesystem::path> without_companion_files(std::vector<std::filesystem::path> files,
                                                           const std::vector<CompanionSpec>& specs);

}  // namespace imflow
