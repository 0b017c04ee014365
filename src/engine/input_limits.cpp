// Input file limits (size, gzip inflated size) and relative-path containment.
#include "input_limits.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <string>
#include <vector>

#include "imflow/errors.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
constexpr uint64_t kMaxDeflateRatio = 1032;

// First two bytes 1f 8b, and ISIZE (the inflated size mod 2^32, from the trailer).
bool read_gzip_isize(const fs::path& path, uint64_t file_size, uint32_t& isize) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char magic[2] = {0, 0}, trailer[4] = {0, 0, 0, 0};
  const bool gzip = ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b && file_size >= 18 &&
                    ::pread(fd, trailer, 4, static_cast<off_t>(file_size - 4)) == 4;
  ::close(fd);
  isize = uint32_t{trailer[0]} | uint32_t{trailer[1]} << 8 | uint32_t{trailer[2]} << 16 | uint32_t{trailer[3]} << 24;
  return gzip;
}

// Inflated bytes, counting at most limit + 1 (gzread handles concatenated members).
uint64_t inflated_size(const fs::path& path, uint64_t limit) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return 0;
  std::vector<char> buffer(1 << 20);
  uint64_t total = 0;
  int got = 0;
  while (total <= limit && (got = gzread(file, buffer.data(), static_cast<unsigned>(buffer.size()))) > 0) total += got;
  gzclose(file);
  return total;  // a corrupt stream stops early: the reader reports it
}
}  // namespace

void check_input_file(const fs::path& path, int64_t max_file_bytes, bool inflate_check) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error || !fs::exists(status)) {
    throw InputError(path.string() + ": cannot access (" + (error ? error.message() : "no such file") +
                     "; a broken symlink?)");
  }
  if (!fs::is_regular_file(status)) throw InputError(path.string() + ": not a regular file");
  const uint64_t size = fs::file_size(path, error);
  if (error) throw InputError(path.string() + ": cannot stat: " + error.message());
  const auto limit = static_cast<uint64_t>(max_file_bytes);
  if (size > limit) {
    throw InputError(path.string() + ": " + std::to_string(size) + " bytes exceeds input.max_file_bytes (" +
                     std::to_string(limit) + ")");
  }
  // The gzip trailer (ISIZE) can lie or, in a truncated file, be any 4 bytes: when it or the
  // deflate ratio says the data could exceed the limit, count the inflated bytes (at most limit + 1).
  uint32_t isize = 0;
  if (!inflate_check || !read_gzip_isize(path, size, isize)) return;
  if ((isize > limit || size * kMaxDeflateRatio > limit) && inflated_size(path, limit) > limit) {
    throw InputError(path.string() + ": gzip data inflates to more than input.max_file_bytes (" +
                     std::to_string(limit) + " bytes; the gzip trailer claims " + std::to_string(isize) +
                     "): a decompression bomb?");
  }
}

bool is_contained_relative(const fs::path& relative) {
  if (relative.empty() || relative.is_absolute() || relative.has_root_name() || relative.has_root_directory()) {
    return false;
  }
  for (const fs::path& part : relative) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

}  // namespace imflow
