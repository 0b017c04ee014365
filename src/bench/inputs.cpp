// Cycled bench inputs (hard links, else symlinks, else copies) and self-removing directories.
#include "bench/inputs.hpp"

#include <cstdio>
#include <stdexcept>

namespace imflow::bench {

namespace fs = std::filesystem;

ScratchDir::ScratchDir(fs::path path) : path_(std::move(path)) { clear(); }

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

ScratchDir::ScratchDir(ScratchDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

ScratchDir& ScratchDir::operator=(ScratchDir&& other) noexcept {
  if (this != &other) {
    ScratchDir dropped(std::move(*this));
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

void ScratchDir::clear() const {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
  fs::create_directories(path_);
}

void make_cycled_inputs(const std::vector<fs::path>& files, const fs::path& root, int64_t count, const fs::path& dir) {
  if (files.empty()) throw std::runtime_error(root.string() + ": no input files to cycle");
  const bool root_is_file = fs::is_regular_file(root);
  for (int64_t i = 0; i < count; ++i) {
    const fs::path& source = files[static_cast<size_t>(i) % files.size()];
    char copy[32];
    std::snprintf(copy, sizeof copy, "c%05lld", static_cast<long long>(i / static_cast<int64_t>(files.size())));
    const fs::path relative = root_is_file ? source.filename() : source.lexically_relative(root);
    const fs::path target = dir / copy / relative;
    fs::create_directories(target.parent_path());
    std::error_code error;
    fs::create_hard_link(source, target, error);
    if (error) {
      error.clear();
      fs::create_symlink(fs::absolute(source), target, error);
    }
    if (error) fs::copy_file(source, target);  // throws with the reason when even this fails
  }
}

}  // namespace imflow::bench
