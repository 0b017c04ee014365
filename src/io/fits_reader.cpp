// FITS reading: scan a file's image HDUs through CFITSIO, read one plane or a region of it as
// float32, directly where the data is uncompressed (fits_direct_read.hpp), else through CFITSIO.
#include <fitsio.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "compressed_stream_end.hpp"
#include "fits_direct_read.hpp"
#include "fits_float_range.hpp"
#include "fits_read_paths.hpp"
#include "fits_status.hpp"
#include "read_only_file.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/trace.hpp"

namespace imflow {

namespace fs = std::filesystem;
using detail::fits_error_text;
using detail::FitsFile;


int64_t FitsImageInfo::planes() const {
  int64_t count = 1;
  for (size_t axis = 2; axis < naxes.size(); ++axis) count *= naxes[axis];
  return count;
}

namespace {
constexpr int kMaxAxes = 9;

FitsFile open_fits(const fs::path& path) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) throw InputError(path.string() + ": not a regular file");
  if (fs::file_size(path, error) == 0) throw InputError(path.string() + ": empty file (0 bytes)");
  FitsFile file;
  int status = 0;
  const detail::FitsMessages messages;
  if (detail::open_fits_readonly(file, path, &status) != 0) {
    throw InputError(detail::fits_not_opened_text(path, status));
  }
  return file;
}

FitsImageInfo read_image_header(fitsfile* file, const fs::path& path, int hdu) {
  int status = 0;
  FitsImageInfo info;
  info.hdu = hdu;
  int naxis = 0;
  long long naxes[kMaxAxes] = {0};
  const detail::FitsMessages messages;
  if (fits_get_img_paramll(file, kMaxAxes, &info.bitpix, &naxis, naxes, &status) != 0) {
    throw InputError(fits_error_text(path, "HDU " + std::to_string(hdu) + ": bad image header", status));
  }
  if (naxis > kMaxAxes) {
    throw InputError(path.string() + ": HDU " + std::to_string(hdu) + ": NAXIS=" + std::to_string(naxis) +
                     " exceeds the supported " + std::to_string(kMaxAxes));
  }
  info.naxes.assign(naxes, naxes + naxis);
  char extname[FLEN_VALUE] = {0};
  int ignored = 0;
  if (fits_read_key(file, TSTRING, "EXTNAME", extname, nullptr, &ignored) == 0) info.extname = extname;
  return info;
}

bool has_pixels(const FitsImageInfo& info) {
  if (info.naxes.size() < 2) return false;
  for (int64_t n : info.naxes) {
    if (n <= 0) return false;
  }
  return true;
}

// Whether CFITSIO reads the file's own bytes, so that its HDU addresses are offsets in the file:
// not for a whole-file compressed name, nor gzip'd content under a plain name (CFITSIO
// decompressed it, "compress://").
bool bytes_as_on_disk(fitsfile* file, const fs::path& path) {
  int status = 0;
  char url_type[FLEN_FILENAME] = {0};
  return !whole_file_compressed(path) && fits_url_type(file, url_type, &status) == 0 && std::string(url_type) == "file://";
}

// An uncompressed HDU whose header promises more bytes than the file holds is rejected here,
// before anything is allocated for it.
void check_data_fits_in_file(fitsfile* file, const fs::path& path, const FitsImageInfo& info, uintmax_t file_size) {
  int status = 0;
  if (fits_is_compressed_image(file, &status) || !bytes_as_on_disk(file, path)) return;
  long long header_start = 0, data_start = 0, data_end = 0;
  status = 0;
  if (fits_get_hduaddrll(file, &header_start, &data_start, &data_end, &status) != 0) return;
  long double bytes = std::abs(info.bitpix) / 8;
  for (int64_t n : info.naxes) bytes *= n;
  if (data_start + bytes > static_cast<long double>(file_size)) {
    char claimed[64];
    std::snprintf(claimed, sizeof claimed, "%.0Lf", bytes);
    throw InputError(path.string() + ": HDU " + std::to_string(info.hdu) + ": header claims " + claimed + " bytes of data but the file holds only " +
                     std::to_string(file_size > static_cast<uintmax_t>(data_start) ? file_size - data_start : 0) +
                     " after the header (truncated file or lying header)");
  }
}

// After the last HDU CFITSIO reads (it counts HDUs up to the first it cannot parse): in a plain
// file, an extension whose header it rejects (the bytes there start with XTENSION) is an HDU
// that fails with CFITSIO's reason; any other non-zero bytes there are logged as ignored.
std::optional<FitsImageInfo> unreadable_extension_after(fitsfile* file, const fs::path& path, int hdus, uintmax_t file_size) {
  if (!bytes_as_on_disk(file, path)) return std::nullopt;
  int status = 0;
  long long header_start = 0, data_start = 0, data_end = 0;
  if (fits_movabs_hdu(file, hdus, nullptr, &status) != 0 ||
      fits_get_hduaddrll(file, &header_start, &data_start, &data_end, &status) != 0 ||
      static_cast<uintmax_t>(data_end) >= file_size) {
    return std::nullopt;
  }
  char next[2880] = {0};
  const detail::ReadOnlyFile bytes(path);
  const ssize_t got = ::pread(bytes.fd(), next, sizeof next, static_cast<off_t>(data_end));
  if (got <= 0) return std::nullopt;
  if (got >= 8 && std::string_view(next, 8) == "XTENSION") {
    status = 0;
    fits_clear_errmsg();  // the count's own try at it left the same lines
    fits_movabs_hdu(file, hdus + 1, nullptr, &status);  // fails: CFITSIO's reason
    FitsImageInfo info;
    info.hdu = hdus;
    info.error = fits_error_text(path, "HDU " + std::to_string(hdus) + ": unreadable extension header", status);
    return info;
  }
  if (std::any_of(next, next + got, [](char c) { return c != 0; })) {
    spdlog::warn("{}: {} bytes after the last HDU are not a FITS extension: ignored", path.string(),
                 file_size - static_cast<uintmax_t>(data_end));
  }
  return std::nullopt;
}
}  // namespace

std::vector<FitsImageInfo> scan_fits(const fs::path& path) {
  FitsFile file = open_fits(path);
  const uintmax_t file_size = fs::file_size(path);
  int status = 0;
  int hdus = 0;
  const detail::FitsMessages messages;
  if (fits_get_num_hdus(file.get(), &hdus, &status) != 0) {
    throw InputError(fits_error_text(path, "cannot count HDUs", status));
  }
  std::vector<FitsImageInfo> images;
  for (int hdu = 0; hdu < hdus; ++hdu) {
    int type = 0;
    if (fits_movabs_hdu(file.get(), hdu + 1, &type, &status) != 0) {
      throw InputError(fits_error_text(path, "cannot read HDU " + std::to_string(hdu), status));
    }
    if (type != IMAGE_HDU) continue;  // tile-compressed images report IMAGE_HDU too
    FitsImageInfo info;
    try {
      info = read_image_header(file.get(), path, hdu);
      if (!has_pixels(info)) continue;
      check_data_fits_in_file(file.get(), path, info, file_size);
    } catch (const InputError& failure) {  // this HDU fails; the others go on
      info.hdu = hdu;
      info.error = failure.what();
    }
    images.push_back(std::move(info));
  }
  if (auto unreadable = unreadable_extension_after(file.get(), path, hdus, file_size)) images.push_back(std::move(*unreadable));
  if (images.empty()) throw InputError(path.string() + ": no image HDU with at least two non-empty axes");
  return images;
}

namespace {
// The open HDU of a plane, checked: header, plane index, data within the file.
struct OpenPlane {
  FitsFile file;
  FitsImageInfo info;
  long long first[kMaxAxes] = {1, 1, 1, 1, 1, 1, 1, 1, 1};  // first pixel of the plane (axes 3+ set)
};

// CFITSIO cannot decompress GZIP tiles of 64-bit integers (its imcopy and funpack stop with status
// 410), yet its pixel reads of them return no error and arbitrary values: refused here.
void check_decompressible(fitsfile* file, const fs::path& path, int hdu) {
  int status = 0;
  if (fits_is_compressed_image(file, &status) == 0) return;
  int zbitpix = 0;
  char method[FLEN_VALUE] = {0};
  if (fits_read_key(file, TINT, "ZBITPIX", &zbitpix, nullptr, &status) != 0 ||
      fits_read_key(file, TSTRING, "ZCMPTYPE", method, nullptr, &status) != 0) {
    return;  // the read reports what is missing
  }
  if (zbitpix == 64 && std::string(method).starts_with("GZIP")) {
    throw InputError(path.string() + ": HDU " + std::to_string(hdu) + ": 64-bit integer tiles compressed with " + method +
                     ", which CFITSIO cannot decompress (RICE_1, PLIO_1, HCOMPRESS_1 or no compression can be read)");
  }
}

OpenPlane open_plane(const fs::path& path, int hdu, int64_t plane) {
  OpenPlane open;
  open.file = open_fits(path);
  int status = 0;
  int type = 0;
  const detail::FitsMessages messages;
  if (fits_movabs_hdu(open.file.get(), hdu + 1, &type, &status) != 0) {
    throw InputError(fits_error_text(path, "cannot move to HDU " + std::to_string(hdu), status));
  }
  open.info = read_image_header(open.file.get(), path, hdu);
  const FitsImageInfo& info = open.info;
  if (!has_pixels(info)) throw InputError(path.string() + ": HDU " + std::to_string(hdu) + " holds no 2-D image");
  if (plane < 0 || plane >= info.planes()) {
    throw InputError(path.string() + ": HDU " + std::to_string(hdu) + " has no plane " + std::to_string(plane));
  }
  check_data_fits_in_file(open.file.get(), path, info, fs::file_size(path));
  check_decompressible(open.file.get(), path, hdu);
  // The plane index spread over axes 3+.
  int64_t rest = plane;
  for (size_t axis = 2; axis < info.naxes.size(); ++axis) {
    open.first[axis] = 1 + rest % info.naxes[axis];
    rest /= info.naxes[axis];
  }
  return open;
}

void check_pixel_limit(const fs::path& path, int hdu, int64_t width, int64_t height, const ReadLimits& limits,
                       const char* what) {
  if (height > 0 && width > limits.max_pixels / height) {
    throw InputError(path.string() + ": HDU " + std::to_string(hdu) + ": " + what + std::to_string(width) + "x" +
                     std::to_string(height) + " pixels exceeds the limit of " + std::to_string(limits.max_pixels));
  }
}

std::string plane_text(int hdu, int64_t plane) { return "HDU " + std::to_string(hdu) + " plane " + std::to_string(plane); }

// The direct read's layout of the open HDU, when the read path allows it and it applies.
std::optional<detail::DirectImageLayout> direct_layout(const OpenPlane& open, const fs::path& path,
                                                       detail::FitsReadPath read_path) {
  if (read_path != detail::FitsReadPath::fastest || whole_file_compressed(path)) return std::nullopt;
  return detail::direct_image_layout(open.file.get(), open.info);
}

// CFITSIO's read of pixels of the open HDU (`read` makes the call with the status it is given),
// a failure thrown as "FILE: what: CFITSIO error ...". A tile-compressed HDU's failure is read
// again inside FitsMessages, for CFITSIO's own account of it (its status alone says "non-CFITSIO
// program error" of a corrupt tile); pixel reads that succeed never take the messages' lock. A
// gzip or bzip2 file that CFITSIO read short is said to be cut short, corrupt or of several members.
template <typename Read>
void read_pixels(const OpenPlane& open, const fs::path& path, const std::string& what, Read read) {
  int status = 0;
  if (read(&status) == 0) return;
  int ignored = 0;
  if (fits_is_compressed_image(open.file.get(), &ignored)) {
    const detail::FitsMessages messages;
    status = 0;
    if (read(&status) == 0) return;
    throw InputError(fits_error_text(path, what, status));
  }
  std::string message = fits_error_text(path, what, status);
  if (status == END_OF_FILE && whole_file_compressed(path)) {
    if (const std::string problem = detail::compressed_stream_problem(path); !problem.empty()) message += ": " + problem;
  }
  throw InputError(message);
}

// Undefined pixels become NaN: an integer image's BLANK ones, and a tile-compressed image's
// (a quantized float image stores its NaNs as ZBLANK integers, restored only by a null check).
// An uncompressed float image needs no check: its undefined pixels already are NaN, and scaling
// keeps them NaN; skipping the per-pixel test makes those reads faster (measured on 2048x2048
// BITPIX -32 frames).
bool needs_null_check(const OpenPlane& open) {
  int ignored = 0;
  return open.info.bitpix > 0 || fits_is_compressed_image(open.file.get(), &ignored) != 0;
}
}  // namespace

namespace detail {
int64_t read_fits_plane(const fs::path& path, int hdu, int64_t plane, ImageBuffer& out, const ReadLimits& limits,
                        FitsReadPath read_path) {
  std::optional<TracePart> header_part(std::in_place, "fits header");
  OpenPlane open = open_plane(path, hdu, plane);
  if (limits.header_records != nullptr) {
    try {
      *limits.header_records = header_records_of(open.file.get(), path, hdu);
    } catch (const InputError&) {
      limits.header_records->clear();  // the pixels may still be readable; the outputs' WCS says why not
    }
  }
  const FitsImageInfo& info = open.info;
  const int64_t width = info.width(), height = info.height();
  check_pixel_limit(path, hdu, width, height, limits, "");
  out.resize(width, height);
  if (limits.float32_swap_deferred != nullptr) *limits.float32_swap_deferred = false;
  const auto layout = direct_layout(open, path, read_path);
  header_part.reset();
  TracePart pixels_part("fits pixels");
  if (layout) {
    const detail::PixelConversion& c = layout->conversion;
    const bool defer = limits.float32_swap_deferred != nullptr && c.bitpix == -32 && c.scale == 1.0 && c.zero == 0.0;
    read_direct(path, *layout, plane, TileRect{0, 0, width, height}, out.data(), plane_text(hdu, plane), !defer);
    if (defer) *limits.float32_swap_deferred = true;
    detail::check_float_range(path, hdu, plane, c, TileRect{0, 0, width, height}, out, limits);
    return width * height * (std::abs(info.bitpix) / 8);
  }
  float null_value = std::numeric_limits<float>::quiet_NaN();
  float* null_check = needs_null_check(open) ? &null_value : nullptr;
  int any_null = 0;
  read_pixels(open, path, plane_text(hdu, plane) + ": cannot read pixels", [&](int* status) {
    return fits_read_pixll(open.file.get(), TFLOAT, open.first, width * height, null_check, out.data(), &any_null, status);
  });
  return width * height * (std::abs(info.bitpix) / 8);
}

int64_t read_fits_region(const fs::path& path, int hdu, int64_t plane, const TileRect& region, ImageBuffer& out,
                         const ReadLimits& limits, FitsReadPath read_path) {
  OpenPlane open = open_plane(path, hdu, plane);
  const FitsImageInfo& info = open.info;
  if (region.x < 0 || region.y < 0 || region.width <= 0 || region.height <= 0 || region.x_end() > info.width() ||
      region.y_end() > info.height()) {
    throw InputError(path.string() + ": HDU " + std::to_string(hdu) + ": region " + std::to_string(region.width) + "x" +
                     std::to_string(region.height) + "+" + std::to_string(region.x) + "+" + std::to_string(region.y) +
                     " is outside the " + std::to_string(info.width()) + "x" + std::to_string(info.height()) + " image");
  }
  check_pixel_limit(path, hdu, region.width, region.height, limits, "tile of ");
  out.resize(region.width, region.height);
  if (const auto layout = direct_layout(open, path, read_path)) {
    read_direct(path, *layout, plane, region, out.data(),
                plane_text(hdu, plane) + ": the tile at x " + std::to_string(region.x) + ", y " + std::to_string(region.y));
    detail::check_float_range(path, hdu, plane, layout->conversion, region, out, limits);
    return region.size() * (std::abs(info.bitpix) / 8);
  }
  long first[kMaxAxes], last[kMaxAxes], step[kMaxAxes];
  const int naxis = static_cast<int>(info.naxes.size());
  for (int axis = 0; axis < naxis; ++axis) {
    first[axis] = last[axis] = static_cast<long>(open.first[axis]);
    step[axis] = 1;
  }
  first[0] = static_cast<long>(region.x + 1);
  last[0] = static_cast<long>(region.x_end());
  first[1] = static_cast<long>(region.y + 1);
  last[1] = static_cast<long>(region.y_end());
  float null_value = std::numeric_limits<float>::quiet_NaN();
  float* null_check = needs_null_check(open) ? &null_value : nullptr;
  int any_null = 0;
  read_pixels(open, path,
              plane_text(hdu, plane) + ": cannot read the tile at x " + std::to_string(region.x) + ", y " + std::to_string(region.y),
              [&](int* status) {
                return fits_read_subset(open.file.get(), TFLOAT, first, last, step, null_check, out.data(), &any_null, status);
              });
  return region.size() * (std::abs(info.bitpix) / 8);
}

bool fits_direct_read_applies(const fs::path& path, int hdu) {
  const OpenPlane open = open_plane(path, hdu, 0);
  return direct_layout(open, path, FitsReadPath::fastest).has_value();
}
}  // namespace detail

int64_t read_fits_plane(const fs::path& path, int hdu, int64_t plane, ImageBuffer& out, const ReadLimits& limits) {
  return detail::read_fits_plane(path, hdu, plane, out, limits, detail::FitsReadPath::fastest);
}

int64_t read_fits_region(const fs::path& path, int hdu, int64_t plane, const TileRect& region, ImageBuffer& out,
                         const ReadLimits& limits) {
  return detail::read_fits_region(path, hdu, plane, region, out, limits, detail::FitsReadPath::fastest);
}

}  // namespace imflow
