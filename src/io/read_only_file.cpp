// ReadOnlyFile and pread_exactly (read_only_file.hpp).
#include "read_only_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "imflow/errors.hpp"

namespace imflow::detail {

namespace {
std::string errno_text(int error) { return std::error_code(error, std::generic_category()).message(); }
}  // namespace

ReadOnlyFile::ReadOnlyFile(const std::filesystem::path& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
  if (fd_ < 0) throw InputError(path.string() + ": cannot open for reading: " + errno_text(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int error = errno;
    ::close(fd_);
    throw InputError(path.string() + ": cannot stat: " + errno_text(error));
  }
  size_ = static_cast<int64_t>(st.st_size);
}

ReadOnlyFile::~ReadOnlyFile() { ::close(fd_); }

void pread_exactly(const ReadOnlyFile& file, unsigned char* buffer, int64_t bytes, int64_t offset,
                   const std::filesystem::path& path, const std::string& what) {
  while (bytes > 0) {
    const ssize_t got = ::pread(file.fd(), buffer, static_cast<size_t>(bytes), static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw InputError(path.string() + ": " + what + ": cannot read " + std::to_string(bytes) + " bytes at offset " +
                       std::to_string(offset) + ": " + errno_text(errno));
    }
    if (got == 0) {
      throw InputError(path.string() + ": " + what + ": unexpected end of file at offset " + std::to_string(offset) +
                       " (" + std::to_string(bytes) + " more bytes expected; truncated file?)");
    }
    buffer += got;
    bytes -= got;
    offset += got;
  }
}

}  // namespace imflow::detail
