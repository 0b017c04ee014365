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
  // Rename the temporary file over the final name (after an fsync when output_fsync is on).
  // Throws OutputError.
  void commit();

 private:
  std::filesystem::path final_;
  std::filesystem::path temp_;
  bool committed_ = false;
};

// Whether commit() fsyncs each file before the rename (process-wide; default off). The rename
// alone already guarantees that a crashed or killed process never leaves a half-written file
// under a final name; the fsync adds durability across power loss or a kernel crash, at a
// cost of milliseconds per file on real disks (it dominated MRI output on the H100 machine).
void set_output_fsync(bool enabled);

// Write `text` to `path` atomically.
void write_text_atomic(const std::filesystem::path& path, const std::string& text);

}  // namespace imflow
