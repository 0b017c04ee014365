// Opening a FITS file read-only through CFITSIO, whatever its path holds (open_fits_readonly,
// fits_status.hpp), and the descriptor a FitsFile may hold for it.
#include <fcntl.h>
#include <fitsio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

#include "compressed_stream_end.hpp"
#include "fits_status.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace detail {
namespace {
// Text in which CFITSIO's whole-path search for ".Z" or ".bz2" (its choice of decompressor for a
// compressed file) would find one.
bool misleads_decompressor(std::string_view text) {
  return text.find(".Z") != std::string_view::npos || text.find(".bz2") != std::string_view::npos;
}

int open_via_descriptor(FitsFile& file, int fd, const std::string& rest, int* status) {
  file.hold_descriptor(fd);
  const std::string via_fd = "/proc/self/fd/" + std::to_string(fd) + rest;
  return fits_open_diskfile(file.out(), via_fd.c_str(), READONLY, status);
}
}  // namespace

int open_fits_readonly(FitsFile& file, const fs::path& path, int* status) {
  const std::string directory = path.parent_path().string(), name = path.filename().string();
  // A ".Z" or ".bz2" suffix is the name's own and must stay (it is what picks that decompressor).
  const bool compress_suffix = name.ends_with(".Z") || name.ends_with(".bz2");
  if (!compress_suffix && misleads_decompressor(name)) {  // e.g. "run.Zband.fits.gz": the file itself
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) return open_via_descriptor(file, fd, "", status);
  } else if (misleads_decompressor(directory)) {  // e.g. "/data/run.Zeta/img.fits.gz": its directory
    const int dir = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) return open_via_descriptor(file, dir, "/" + name, status);
  }
  return fits_open_diskfile(file.out(), path.c_str(), READONLY, status);  // also reports a failed open
}

namespace {
// fits_not_opened_text's reason, empty when the system and the header show none.
std::string why_not_opened(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  constexpr size_t kCard = 80, kBlock = 2880, kMaxHeaderBytes = size_t{64} << 20;
  std::string reason;
  char block[kBlock];
  for (size_t at = 0; at < kMaxHeaderBytes; at += kBlock) {
    const ssize_t got = ::pread(fd, block, kBlock, static_cast<off_t>(at));
    if (got < static_cast<ssize_t>(kBlock)) {
      if (at > 0) reason = "its primary header has no END card (the file ends at byte " + std::to_string(at + std::max<ssize_t>(got, 0)) + ")";
      break;
    }
    if (at == 0 && std::string_view(block, 6) != "SIMPLE") break;  // compressed, or not FITS: CFITSIO's to say
    bool ended = false;
    for (size_t card = 0; card < kBlock && reason.empty() && !ended; card += kCard) {
      const std::string_view text(block + card, kCard);
      ended = text.starts_with("END") && text.find_first_not_of(' ', 3) == std::string_view::npos;
      for (const char c : text) {
        if (c < 0x20 || c > 0x7e) {
          reason = "its primary header has bytes that are not header text at byte " + std::to_string(at + card) +
                   ", before any END card (a damaged or cut header)";
          break;
        }
      }
    }
    if (ended || !reason.empty()) break;
  }
  ::close(fd);
  return reason;
}
}  // namespace

std::string fits_not_opened_text(const fs::path& path, int status) {
  std::string why = why_not_opened(path);
  if (why.empty()) why = compressed_stream_problem(path);  // CFITSIO: "could not allocate memory", a header of noise
  return why.empty() ? fits_error_text(path, "not a readable FITS file", status)
                     : path.string() + ": not a readable FITS file: " + why;
}

void FitsFile::release_descriptor() {
  if (descriptor_ >= 0) ::close(descriptor_);
  descriptor_ = -1;
}
}  // namespace detail

}  // namespace imflow
