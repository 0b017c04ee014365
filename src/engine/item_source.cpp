// ItemSource: lazy file -> plane enumeration through the input formats.
#include "item_source.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <string>
#include <string_view>
#include <unordered_map>

#include "imflow/io/input_format.hpp"
#include "input_limits.hpp"
#include "tiled_image.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
// "m.hdu1.p2" -> {"m.hdu1", "m"}, "m.p3" -> {"m"}, "m.hdu1" -> {"m"}: the names whose outputs
// could be called `stem` (output_name adds .hduH and .pP).
std::vector<std::string> generated_from(const std::string& stem) {
  std::vector<std::string> bases;
  auto strip = [](const std::string& name, std::string_view marker) -> std::optional<std::string> {
    const size_t dot = name.rfind(marker);
    if (dot == std::string::npos || dot == 0 || dot + marker.size() == name.size()) return std::nullopt;
    const std::string digits = name.substr(dot + marker.size());
    if (!std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) return std::nullopt;
    return name.substr(0, dot);
  };
  if (const auto without_plane = strip(stem, ".p")) {
    bases.push_back(*without_plane);
    if (const auto without_hdu = strip(*without_plane, ".hdu")) bases.push_back(*without_hdu);
  }
  if (const auto without_hdu = strip(stem, ".hdu")) bases.push_back(*without_hdu);
  return bases;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}
}  // namespace

void ItemSource::set_extnames(std::vector<std::string> names) {
  extnames_.clear();
  for (auto& name : names) extnames_.push_back(normalized_extname(std::move(name)));
}

ItemSource::ItemSource(std::vector<fs::path> files, fs::path input_root)
    : files_(std::move(files)), root_(std::move(input_root)) {
  // Outputs are named from the input's name without its image extension (output_stem): m.fits,
  // m.fit, m.fits.fz and m.fits.gz in one directory would all write m.cat.csv, each overwriting
  // the last. The first file in list order keeps the name; the others fail, naming it.
  clashes_with_.assign(files_.size(), {});
  std::vector<std::string> stems(files_.size());
  std::unordered_map<std::string, size_t> first_of_stem;
  for (size_t i = 0; i < files_.size(); ++i) {
    stems[i] = strip_image_extension(files_[i].filename().string());
    const auto [it, inserted] = first_of_stem.emplace((files_[i].parent_path() / stems[i]).string(), i);
    if (!inserted) clashes_with_[i] = files_[it->second];
  }
  // A file may also be named as another's HDU or plane outputs are (m.hdu1.fits beside m.fits);
  // whether they clash depends on that file's HDUs and planes, known when this one is scanned.
  named_like_.assign(files_.size(), std::nullopt);
  for (size_t i = 0; i < files_.size(); ++i) {
    for (const std::string& base : generated_from(stems[i])) {
      const auto found = first_of_stem.find((files_[i].parent_path() / base).string());
      if (found == first_of_stem.end() || found->second == i) continue;
      named_like_[i] = found->second;
      break;
    }
  }
}

void ItemSource::set_companion_extnames(const std::vector<CompanionSpec>& companions) {
  companion_extnames_.clear();
  for (const CompanionSpec& spec : companions) {
    if (spec.names_extension()) companion_extnames_.push_back(normalized_extname(spec.image));
  }
}

bool ItemSource::selected(const InputFormat& format, const PlaneInfo& plane) const {
  if (std::string_view(format.name) != "fits") return true;
  if (!plane.error.empty() && plane.width == 0) return true;  // a header not read: it may be any of them
  const std::string name = normalized_extname(plane.extname);
  if (std::find(companion_extnames_.begin(), companion_extnames_.end(), name) != companion_extnames_.end()) return false;
  return extnames_.empty() || std::find(extnames_.begin(), extnames_.end(), name) != extnames_.end();
}

std::optional<std::string> ItemSource::plane_name_clash(size_t index, size_t other) const {
  const fs::path& path = files_[other];
  const InputFormat* format = input_format_for(path);
  if (format == nullptr) return std::nullopt;
  std::vector<PlaneInfo> planes;
  try {
    planes = format->scan(path);
  } catch (const std::exception&) {
    return std::nullopt;  // that file fails on its own and writes nothing
  }
  const std::string name = strip_image_extension(files_[index].filename().string());
  for (const PlaneInfo& plane : planes) {
    if (!selected(*format, plane) || output_name(path.filename().string(), plane.hdu, plane.plane, plane.planes) != name) {
      continue;
    }
    std::string which = plane.hdu > 0 ? "HDU " + std::to_string(plane.hdu) : "";
    if (plane.planes > 1) which += (which.empty() ? "plane " : " plane ") + std::to_string(plane.plane);
    return files_[index].string() + ": its outputs would have the same names (" + name + ".*) as those of " + which +
           " of " + path.string() + "; rename one of them";
  }
  return std::nullopt;
}

std::vector<ItemRef> ItemSource::scan_file(size_t file_index) const {
  std::vector<ItemRef> refs;
  ItemRef base;
  base.path = files_[file_index];
  std::error_code error;
  // From the listed path (never a symlink target), so outputs mirror the input tree below OUT.
  base.relative = fs::is_directory(root_, error) ? base.path.lexically_relative(root_) : base.path.filename();
  base.file_index = static_cast<int64_t>(file_index);
  try {
    if (!is_contained_relative(base.relative)) {
      throw std::runtime_error(base.path.string() + ": its path relative to the input directory ('" +
                               base.relative.string() + "') would place outputs outside the output directory");
    }
    if (!clashes_with_[file_index].empty()) {
      throw std::runtime_error(base.path.string() + ": its outputs would have the same names as those of " +
                               clashes_with_[file_index].string() + " (same name without the image extension); rename one of them");
    }
    if (named_like_[file_index]) {
      if (auto clash = plane_name_clash(file_index, *named_like_[file_index])) throw std::runtime_error(*clash);
    }
    check_input_file(base.path, max_file_bytes_, true);
    const InputFormat* format = input_format_for(base.path);
    if (format == nullptr) throw std::runtime_error(base.path.string() + ": unknown file format (by name)");
    const std::vector<PlaneInfo> planes = format->scan(base.path);
    std::vector<std::string> passed_over;  // image HDUs not selected by extnames_, for the error below
    for (const PlaneInfo& plane : planes) {
      if (!selected(*format, plane)) {
        if (plane.plane == 0) passed_over.push_back(std::to_string(plane.hdu) + (plane.extname.empty() ? " (no EXTNAME)" : " " + plane.extname));
        continue;
      }
      ItemRef ref = base;
      ref.hdu = plane.hdu;
      ref.extname = plane.extname;
      ref.plane = plane.plane;
      ref.planes = plane.planes;
      ref.bit_depth = plane.bit_depth;
      ref.error = plane.error;
      std::vector<ItemRef> tiles = tiler_ && plane.error.empty() ? tiler_(ref, plane) : std::vector<ItemRef>{};
      if (tiles.empty()) {
        refs.push_back(std::move(ref));
      } else {
        for (ItemRef& tile : tiles) refs.push_back(std::move(tile));
      }
    }
    if (refs.empty() && !passed_over.empty()) {
      throw std::runtime_error(base.path.string() + ": no image HDU with EXTNAME " + joined(extnames_) +
                               " (input.extnames); its image HDUs: " + joined(passed_over));
    }
  } catch (const std::exception& failure) {
    base.error = failure.what();
    refs.push_back(std::move(base));
  }
  if (refs.empty()) {
    base.error = base.path.string() + ": no image plane in the file";
    refs.push_back(std::move(base));
  }
  refs.back().last_of_file = true;
  if (refs.back().tiled) refs.back().tiled->image.last_of_file = true;
  return refs;
}

void ItemSource::scan_ahead() {
  // A few files per thread: enough to keep every reader busy, small enough to start at once.
  const size_t batch = std::min(files_.size() - next_file_, 4 * static_cast<size_t>(tbb::this_task_arena::max_concurrency()));
  std::vector<std::vector<ItemRef>> scanned(batch);
  // Isolated: the source's thread must not take up a graph task (e.g. a long write) meanwhile.
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(size_t{0}, batch, [&](size_t i) { scanned[i] = scan_file(next_file_ + i); });
  });
  next_file_ += batch;
  for (auto& refs : scanned) {
    for (ItemRef& ref : refs) pending_.push_back(std::move(ref));
  }
}

void ItemSource::drop_tiles_of(const ItemRef& tile) {
  while (!pending_.empty() && pending_.front().tiled == tile.tiled) pending_.pop_front();
}

bool ItemSource::next(ItemRef& out) {
  for (;;) {
    while (pending_.empty()) {
      if (feed_) {
        const std::optional<int64_t> index = feed_();
        if (!index || *index < 0 || static_cast<size_t>(*index) >= files_.size()) return false;
        ++next_file_;
        for (ItemRef& ref : scan_file(static_cast<size_t>(*index))) pending_.push_back(std::move(ref));
      } else {
        if (next_file_ >= files_.size()) return false;
        scan_ahead();
      }
    }
    out = std::move(pending_.front());
    pending_.pop_front();
    if (out.tiled && out.tile == 0) {  // the first tile of a large image: the image is skipped or prepared here
      if (skip_ && skip_(out.tiled->image)) {
        drop_tiles_of(out);
        continue;
      }
      out.index = next_index_++;
      if (prepare_) prepare_(out);
      if (!out.error.empty()) drop_tiles_of(out);
      return true;
    }
    if (skip_ && out.error.empty() && !out.tiled && skip_(out)) continue;
    out.index = next_index_++;
    return true;
  }
}

}  // namespace imflow
