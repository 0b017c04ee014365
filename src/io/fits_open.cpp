// Opening a FITS file read-only through CFITSIO, whatever its path holds (open_fits_readonly,
// fits_status.hpp), and the descriptor a FitsFile may hold for it.
#include <fcntl.h>
#include <fitsio.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

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

void FitsFile::release_descriptor() {
  if (descriptor_ >= 0) ::close(descriptor_);
  descriptor_ = -1;
}
}  // namespace detail

}  // namespace imflow
