// Input enumeration: files under the input directory matching the glob patterns, sorted.
#include <fnmatch.h>

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
  auto consider = [&](const fs::directory_entry& entry) {
    std::error_code ignored;
    // Broken symlinks and special files are listed too (they fail with a clear error later),
    // directories are not.
    if (entry.is_directory(ignored)) return;
    if (matches_any(entry.path(), input.patterns)) files.push_back(entry.path());
  };
  // Directory symlinks are not followed, so a symlink loop cannot trap the walk.
  const auto options = fs::directory_options::skip_permission_denied;
  if (input.recursive) {
    for (fs::recursive_directory_iterator it(input.dir, options, error), end; !error && it != end; it.increment(error)) {
      consider(*it);
    }
  } else {
    for (fs::directory_iterator it(input.dir, options, error), end; !error && it != end; it.increment(error)) {
      consider(*it);
    }
  }
  if (error) throw ConfigError(input.dir.string() + ": cannot list the directory: " + error.message());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace imflow
