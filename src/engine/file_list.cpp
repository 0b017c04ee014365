// Input enumeration: files under the input directory matching the glob patterns, sorted.
#include <fnmatch.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "imflow/engine.hpp"
#include "imflow/errors.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
// Ignoring case (FNM_CASEFOLD): "*.fits" lists IMAGE.FITS too, as written by older instruments.
bool matches_any(const fs::path& path, const std::vector<std::string>& patterns) {
  const std::string name = path.filename().string();
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& pattern) { return fnmatch(pattern.c_str(), name.c_str(), FNM_CASEFOLD) == 0; });
}

// Lists `dir` into `files`, and its subdirectories with input.recursive. The input directory
// itself must be listable (the run cannot start otherwise); a subdirectory that is not is
// skipped with a warning, as is a directory whose name matches the patterns when the walk does
// not descend. Directory symlinks are not followed, so a symlink loop cannot trap the walk;
// broken symlinks and special files are listed (they fail with a clear error later).
void walk(const fs::path& dir, bool is_input_dir, const InputConfig& input, std::vector<fs::path>& files) {
  const auto unlistable = [&](const std::error_code& error) {
    if (is_input_dir) throw InputError(dir.string() + ": cannot list the directory: " + error.message());
    spdlog::warn("{}: cannot list the directory ({}); the files below it are skipped", dir.string(), error.message());
  };
  std::error_code error;
  std::vector<fs::path> subdirectories;
  for (fs::directory_iterator it(dir, error), end; it != end; it.increment(error)) {
    std::error_code ignored;
    const bool is_directory = it->is_directory(ignored);
    if (is_directory && !it->is_symlink(ignored) && input.recursive) {
      subdirectories.push_back(it->path());
    } else if (matches_any(it->path(), input.patterns)) {
      if (!is_directory) {
        files.push_back(it->path());
      } else if (!input.recursive) {
        spdlog::warn("{}: a directory, not read (its files are listed with input.recursive)", it->path().string());
      }
    }
  }
  if (error) return unlistable(error);
  for (const fs::path& subdirectory : subdirectories) walk(subdirectory, false, input, files);
}
}  // namespace

std::vector<fs::path> list_input_files(const InputConfig& input) {
  if (input.dir.empty()) throw ConfigError("input.dir: no input directory given (set it in the pipeline or use --input)");
  std::error_code error;
  const fs::file_status status = fs::status(input.dir, error);
  // The pipeline is valid, the input is not there: the run cannot start (exit 3, not 1).
  if (error || !fs::exists(status)) throw InputError(input.dir.string() + ": no such input file or directory");
  if (fs::is_regular_file(status)) return {input.dir};
  if (!fs::is_directory(status)) throw InputError(input.dir.string() + ": not a directory or a file");

  std::vector<fs::path> files;
  walk(input.dir, true, input, files);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace imflow
