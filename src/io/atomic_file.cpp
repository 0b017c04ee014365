// AtomicOutput: temporary name + (optional fsync) + rename. AtomicFileWriter: an unnamed file
// (O_TMPFILE) + (optional fsync) + linkat, else the same as AtomicOutput.
#include "imflow/io/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "imflow/errors.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
std::atomic<unsigned long> temp_counter{0};
std::atomic<bool> output_fsync{false};

void fsync_path(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void create_parent_directories(const fs::path& final_path) {
  std::error_code error;
  if (final_path.has_parent_path()) fs::create_directories(final_path.parent_path(), error);
  if (error) throw OutputError(final_path.parent_path().string() + ": cannot create directory: " + error.message());
}

// ".NAME.tmp-PID-N" beside `final_path` (remove_stale_temporaries in manifest.cpp knows the form).
fs::path temporary_name(const fs::path& final_path) {
  std::string name = ".";
  name += final_path.filename().string();
  name += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(temp_counter++);
  return final_path.parent_path() / name;
}

// An unnamed file is linked through its /proc/self/fd entry (linkat's AT_EMPTY_PATH would need
// CAP_DAC_READ_SEARCH), so without /proc there are none.
bool unnamed_files_linkable() {
#if defined(O_TMPFILE)
  static const bool linkable = ::access("/proc/self/fd", X_OK) == 0;
  return linkable;
#else
  return false;
#endif
}

// An unnamed file in `dir`, or -1 where the filesystem (or the kernel) has none.
int open_unnamed(const fs::path& dir) {
#if defined(O_TMPFILE)
  return ::open(dir.empty() ? "." : dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
#else
  (void)dir;
  return -1;
#endif
}
}  // namespace

AtomicOutput::AtomicOutput(fs::path final_path) : final_(std::move(final_path)) {
  create_parent_directories(final_);
  temp_ = temporary_name(final_);
}

AtomicOutput::~AtomicOutput() {
  if (!committed_) {
    std::error_code ignored;
    fs::remove(temp_, ignored);
  }
}

void AtomicOutput::commit() {
  if (output_fsync) fsync_path(temp_);
  if (::rename(temp_.c_str(), final_.c_str()) != 0) {
    throw OutputError(final_.string() + ": cannot rename the finished file into place: " + std::strerror(errno));
  }
  committed_ = true;
}

AtomicFileWriter::AtomicFileWriter(fs::path final_path, TempFile temp) : final_(std::move(final_path)) {
  create_parent_directories(final_);
  if (temp == TempFile::unnamed_where_possible && unnamed_files_linkable()) fd_ = open_unnamed(final_.parent_path());
  unnamed_ = fd_ >= 0;
  if (unnamed_) return;
  temp_ = temporary_name(final_);
  fd_ = ::open(temp_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) throw OutputError(final_.string() + ": cannot create: " + std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) {
    std::error_code ignored;
    fs::remove(temp_, ignored);
  }
}

int write_all(int fd, std::string_view bytes, int64_t offset) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t wrote = offset < 0 ? ::write(fd, bytes.data() + done, bytes.size() - done)
                                     : ::pwrite(fd, bytes.data() + done, bytes.size() - done,
                                                static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return wrote < 0 ? errno : EIO;
    done += static_cast<size_t>(wrote);
  }
  return 0;
}

void AtomicFileWriter::write(std::string_view bytes) {
  if (const int failure = write_all(fd_, bytes); failure != 0) {
    throw write_failed(final_, failure);
  }
}

void AtomicFileWriter::commit() {
  if (output_fsync && ::fsync(fd_) != 0) throw OutputError(final_.string() + ": fsync failed: " + std::strerror(errno));
  if (temp_.empty()) {
    char link[64];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd_);
    if (::linkat(AT_FDCWD, link, AT_FDCWD, final_.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      committed_ = true;
      return;
    }
    // linkat never replaces a name: an existing final file is replaced by a rename, as below.
    if (errno != EEXIST) throw OutputError(final_.string() + ": cannot link the finished file into place: " + std::strerror(errno));
    const fs::path named = temporary_name(final_);
    if (::linkat(AT_FDCWD, link, AT_FDCWD, named.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      throw OutputError(final_.string() + ": cannot link the finished file into place: " + std::strerror(errno));
    }
    temp_ = named;
  }
  // A write error that shows only when the file is closed (NFS) must stop the rename.
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) throw OutputError(final_.string() + ": write failed: close: " + std::strerror(errno));
  if (::rename(temp_.c_str(), final_.c_str()) != 0) {
    throw OutputError(final_.string() + ": cannot rename the finished file into place: " + std::strerror(errno));
  }
  committed_ = true;
}

void set_output_fsync(bool enabled) { output_fsync = enabled; }

void write_text_atomic(const fs::path& path, const std::string& text) {
  AtomicFileWriter output(path);
  output.write(text);
  output.commit();
}

}  // namespace imflow
