// Bench inputs: N input files made by cycling a directory's files as hard links (symlinks or
// copies where links fail) in a temporary directory that is removed afterwards.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

namespace imflow::bench {

// A directory removed (recursively) when the object goes out of scope.
class ScratchDir {
 public:
  ScratchDir() = default;
  explicit ScratchDir(std::filesystem::path path);
  ~ScratchDir();
  ScratchDir(ScratchDir&& other) noexcept;
  ScratchDir& operator=(ScratchDir&& other) noexcept;
  const std::filesystem::path& path() const { return path_; }
  // Empty the directory (and recreate it).
  void clear() const;

 private:
  std::filesystem::path path_;
};

// `count` files in `dir`: file i is files[i % n] at dir/cK/<its path relative to root>, where
// K = i / n, so names and extensions (hence patterns and formats) are kept.
void make_cycled_inputs(const std::vector<std::filesystem::path>& files, const std::filesystem::path& root,
                        int64_t count, const std::filesystem::path& dir);

}  // namespace imflow::bench
