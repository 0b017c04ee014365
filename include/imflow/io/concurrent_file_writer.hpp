// Writes byte ranges of one open file from several threads at once. write() and pwrite() into one
// file take the file's lock (tmpfs, ext4, XFS), so threads filling it side by side would copy one
// at a time; copy_at() copies a range through a shared mapping of the file instead, after its
// pages have been faulted in (MADV_POPULATE_WRITE, on all copying threads at once), so that a
// full filesystem is an error code, not a SIGBUS, and unmaps the range's pages once copied (they
// stay in the file), so that they do not count as the process's resident memory. A page written
// through a mapping costs more than through pwrite() (a fault, and tmpfs zeroes the page first),
// so a thread that writes alone should use write_at(). Where the file cannot be mapped or has no
// fallocate (NFS, some FUSE filesystems), copy_at() is write_at().
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace imflow {

class ConcurrentFileWriter {
 public:
  // Maps `fd` (opened read-write) for ranges below `reserve_bytes`; the mapping reserves address
  // space only. The descriptor stays the caller's.
  explicit ConcurrentFileWriter(int fd, size_t reserve_bytes = size_t{256} << 30);
  ~ConcurrentFileWriter();
  ConcurrentFileWriter(const ConcurrentFileWriter&) = delete;
  ConcurrentFileWriter& operator=(const ConcurrentFileWriter&) = delete;

  // Both write `pieces` one after the other from file offset `offset` (the file grows as needed)
  // and return 0 or the errno of the failure; both are thread-safe for ranges that do not overlap.
  int write_at(uint64_t offset, std::span<const std::string_view> pieces) const;  // pwrite()
  int copy_at(uint64_t offset, std::span<const std::string_view> pieces) const;   // the mapping
  // Whether copy_at() goes through the mapping (false: it is write_at()).
  bool mapped() const { return map_ != nullptr; }

 private:
  int fd_;
  char* map_ = nullptr;
  size_t map_bytes_ = 0;
};

}  // namespace imflow
