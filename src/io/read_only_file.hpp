// A read-only file descriptor (RAII) and exact positioned reads that throw InputError naming the
// file: the direct FITS reads and the PNG reader's one read per file.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

namespace imflow::detail {

class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::filesystem::path& path);  // throws "cannot open for reading"
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;
  int fd() const { return fd_; }
  int64_t size() const { return size_; }  // at open time

 private:
  int fd_;
  int64_t size_ = 0;
};

// Fill `bytes` bytes at `buffer` from file offset `offset`, or throw naming the file, `what` was
// being read, and why (a read error, or an end of file before `bytes`: a truncated file).
void pread_exactly(const ReadOnlyFile& file, unsigned char* buffer, int64_t bytes, int64_t offset,
                   const std::filesystem::path& path, const std::string& what);

}  // namespace imflow::detail
