// CFITSIO error handling: turn a non-zero status into an exception naming the file.
#pragma once
#include <fitsio.h>

#include <filesystem>
#include <string>
#include <vector>

namespace imflow::detail {

// CFITSIO keeps one process-wide stack of error messages, shared by every thread: calls that
// succeed leave messages there too (opening a tile-compressed HDU without ZSCALE/ZZERO columns
// pushes four "ffgcnn could not find column" lines), and concurrent failures interleave theirs.
// A call whose failure is reported with its messages runs, with that report, inside a
// FitsMessages: the first on a thread takes a process-wide lock (so the stack is read by one
// thread at a time; nested ones share it), initializes CFITSIO once (its first open or create
// re-initializes its global lock, which a concurrent clear could leave locked for good) and
// empties the stack. Keep them around short calls (opening, moving, reading headers): pixel reads
// and writes run outside one, and their failures are reported by status alone.
class FitsMessages {
 public:
  FitsMessages();
  ~FitsMessages();
  FitsMessages(const FitsMessages&) = delete;
  FitsMessages& operator=(const FitsMessages&) = delete;
  // Empty the stack: a failure handled here, whose messages are not the next call's.
  void discard() const;
};

// "FILE: what: CFITSIO error N (text)", and inside a FitsMessages the messages the failed call left
// on CFITSIO's stack, oldest first (without the lines that only name a file).
std::string fits_error_text(const std::filesystem::path& path, const std::string& what, int status);

class FitsFile;

// fits_open_diskfile(path, READONLY) (a plain path: no CFITSIO extended syntax such as "[1]").
// CFITSIO picks the decompressor of a compressed file (found by its first bytes, whatever its
// name) by searching the whole path for ".Z" (Unix compress) or ".bz2" (bzip2), else gzip: a gzip
// file below a directory such as "/data/run.Zeta" went to the LZW decoder and failed. A file
// whose name holds one (not as its suffix) is opened as /proc/self/fd/FILE; one below such a
// directory as /proc/self/fd/DIR/NAME, which keeps the name's own suffix. `file` holds that
// descriptor open while it is open (a reused descriptor number would make another file look
// "already open" to CFITSIO, which shares handles by name).
int open_fits_readonly(FitsFile& file, const std::filesystem::path& path, int* status);

// "FILE: not a readable FITS file: why" for a file open_fits_readonly failed on with `status`:
// the system's reason ("Permission denied") or, for a plain FITS file (starting "SIMPLE"), a
// primary header without an END card (CFITSIO says "illegal character in keyword" of the pixels
// it reads as cards), where CFITSIO's status hides them; else CFITSIO's account (fits_error_text).
std::string fits_not_opened_text(const std::filesystem::path& path, int status);

// The header of the HDU `file` is at (HDU `hdu` of `path`) as read_fits_header_records gives it.
// Throws InputError naming the file when it cannot be read.
std::vector<std::string> header_records_of(fitsfile* file, const std::filesystem::path& path, int hdu);

// RAII for an open fitsfile*: closes it (ignoring errors) when it goes out of scope.
class FitsFile {
 public:
  FitsFile() = default;
  explicit FitsFile(fitsfile* file) : file_(file) {}
  ~FitsFile() { close(); }
  FitsFile(const FitsFile&) = delete;
  FitsFile& operator=(const FitsFile&) = delete;
  FitsFile(FitsFile&& other) noexcept : file_(other.file_), descriptor_(other.descriptor_) {
    other.file_ = nullptr;
    other.descriptor_ = -1;
  }
  FitsFile& operator=(FitsFile&& other) noexcept {
    if (this != &other) {
      close();
      file_ = other.file_;
      descriptor_ = other.descriptor_;
      other.file_ = nullptr;
      other.descriptor_ = -1;
    }
    return *this;
  }
  fitsfile* get() const { return file_; }
  fitsfile** out() { return &file_; }
  void close() { close_checked(); }
  // Close and report the status (for writers, where a failed close means a failed write).
  int close_checked() {
    int status = 0;
    if (file_ != nullptr) fits_close_file(file_, &status);
    file_ = nullptr;
    release_descriptor();
    return status;
  }
  // The descriptor a /proc/self/fd/... open goes through (open_fits_readonly).
  void hold_descriptor(int fd) {
    release_descriptor();
    descriptor_ = fd;
  }

 private:
  void release_descriptor();
  fitsfile* file_ = nullptr;
  int descriptor_ = -1;
};

}  // namespace imflow::detail
