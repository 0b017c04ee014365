// ConcurrentFileWriter: pwrite(), or copies through a shared mapping of pages faulted in first.
#include "imflow/io/concurrent_file_writer.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "imflow/io/atomic_file.hpp"

namespace imflow {

namespace {
const uint64_t kPageBytes = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));

// fallocate(fd, 0, offset, bytes), retried when interrupted: 0 or its errno.
int allocate(int fd, uint64_t offset, uint64_t bytes) {
  int failure = 0;
  do {
    failure = ::fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(bytes)) == 0 ? 0 : errno;
  } while (failure == EINTR);
  return failure;
}
}  // namespace

ConcurrentFileWriter::ConcurrentFileWriter(int fd, size_t reserve_bytes) : fd_(fd) {
  if (reserve_bytes == 0) return;
  void* map = ::mmap(nullptr, reserve_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return;  // an address-space limit, or a file that cannot be mapped
  map_ = static_cast<char*>(map);
  map_bytes_ = reserve_bytes;
}

ConcurrentFileWriter::~ConcurrentFileWriter() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
}

int ConcurrentFileWriter::write_at(uint64_t offset, std::span<const std::string_view> pieces) const {
  for (const std::string_view piece : pieces) {
    if (const int failure = write_all(fd_, piece, static_cast<int64_t>(offset)); failure != 0) return failure;
    offset += piece.size();
  }
  return 0;
}

int ConcurrentFileWriter::copy_at(uint64_t offset, std::span<const std::string_view> pieces) const {
  uint64_t bytes = 0;
  for (const std::string_view piece : pieces) bytes += piece.size();
  if (bytes == 0) return 0;
  if (map_ == nullptr || offset + bytes > map_bytes_) return write_at(offset, pieces);
  // The file grows to the range's end first (fallocate() of its last byte: it never shrinks a
  // file, so threads filling other ranges are safe).
  if (const int failure = allocate(fd_, offset + bytes - 1, 1); failure != 0) {
    return failure == EOPNOTSUPP ? write_at(offset, pieces) : failure;
  }
  // Then the range's pages, faulted in writable without being written (MADV_POPULATE_WRITE):
  // on every copying thread at once, where fallocate() of the range would give them their
  // blocks under the file's lock, one thread at a time (tmpfs). A page the filesystem cannot
  // back fails the madvise, not the copy (a SIGBUS); then, as on kernels without it (before
  // 5.14), fallocate() of the whole range gives the blocks or the errno.
  const uint64_t first_page = offset / kPageBytes * kPageBytes;
  if (::madvise(map_ + first_page, offset + bytes - first_page, MADV_POPULATE_WRITE) != 0) {
    if (const int failure = allocate(fd_, offset, bytes); failure != 0) {
      return failure == EOPNOTSUPP ? write_at(offset, pieces) : failure;
    }
  }
  char* at = map_ + offset;
  for (const std::string_view piece : pieces) {
    if (piece.empty()) continue;
    std::memcpy(at, piece.data(), piece.size());
    at += piece.size();
  }
  // The pages stay in the file; only this process's view of them goes, so that they do not count
  // as its resident memory (a merged catalog of gigabytes would otherwise show in its RSS).
  ::madvise(map_ + first_page, offset + bytes - first_page, MADV_DONTNEED);
  return 0;
}

}  // namespace imflow
