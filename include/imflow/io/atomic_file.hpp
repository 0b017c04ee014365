// Atomic outputs: a crash or an error never leaves a half-written file under the final name.
// AtomicOutput writes under a temporary name in the destination directory, renamed on commit
// (for writers that need a path, such as CFITSIO); AtomicFileWriter writes through a descriptor
// into an unnamed file that commit links into place, one directory change instead of two.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string_view>

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

// An output written through a file descriptor. Where the filesystem offers unnamed files (Linux's
// O_TMPFILE: ext4, XFS, Btrfs, tmpfs) the data goes into one and commit() links it under the final
// name: the directory changes once per file, not twice (create, then rename), which is what
// many threads writing small files into one directory wait for. Elsewhere (and for
// TempFile::named) a temporary name renamed on commit, as AtomicOutput. A final name that
// already exists is replaced atomically either way.
class AtomicFileWriter {
 public:
  enum class TempFile { unnamed_where_possible, named };
  // Creates the parent directories of `final_path` and the file. Throws OutputError.
  explicit AtomicFileWriter(std::filesystem::path final_path, TempFile temp = TempFile::unnamed_where_possible);
  ~AtomicFileWriter();  // an uncommitted file is discarded
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends all of `bytes`. Throws OutputError naming the final path.
  void write(std::string_view bytes);
  // Publishes the file under its final name (after an fsync when output_fsync is on). Throws OutputError.
  void commit();
  // Whether the data goes into an unnamed file (false: a temporary name).
  bool unnamed() const { return unnamed_; }
  // The file's descriptor, open for reading and writing: for writes at offsets
  // (ConcurrentFileWriter) before commit(). write() appends at the descriptor's position.
  int descriptor() const { return fd_; }

 private:
  std::filesystem::path final_;
  std::filesystem::path temp_;  // the temporary name; empty for an unnamed file
  int fd_ = -1;
  bool unnamed_ = false;
  bool committed_ = false;
};

// Whether commit() fsyncs each file before the link or rename (process-wide; default off). Those
// alone already guarantee that a crashed or killed process never leaves a half-written file
// under a final name; the fsync adds durability across power loss or a kernel crash, at a
// cost of milliseconds per file on real disks (it dominated MRI output on the H100 machine).
void set_output_fsync(bool enabled);

// Writes all of `bytes` to `fd` (at file offset `offset` with pwrite() where it is not negative),
// retrying interrupted and partial writes: 0, or the errno of the failure (EIO when nothing was
// written).
int write_all(int fd, std::string_view bytes, int64_t offset = -1);

// Write `text` to `path` atomically (AtomicFileWriter).
void write_text_atomic(const std::filesystem::path& path, const std::string& text);

}  // namespace imflow
