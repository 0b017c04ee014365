// Atomic outputs: write under a temporary name in the destination directory, rename on commit.
// A crash or an error never leaves a half-written file under the final name.
#pragma once
#include <filesystem>

namespace imflow {

class AtomicOutput {
 public:
  // Creates the parent directories of `final_path`.
  explicit AtomicOutput(std::filesystem::path final_path);
  ~AtomicOutput();  // removes the temporary file unless committed
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  const std::filesystem::path& temp_path() const { return temp_; }
  const std::filesystem::path& final_path() const { return final_; }
  // fsync the temporary file and rename it over the final name. Throws OutputError.
  void commit();

 private:
  std::filesystem::path final_;
  std::filesystem::path temp_;
  bool committed_ = false;
};

// Write `text` to `path` atomically.
void write_text_atomic(const std::filesystem::path& path, const std::string& text);

}  // namespace imflow
