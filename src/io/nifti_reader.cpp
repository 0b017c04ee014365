// NIfTI-1, NIfTI-2 and Analyze 7.5 input through nifticlib's nifti2_io (Debian libnifti2-dev, 64-bit
// dims): header checks, one slice per read.
#include <nifti2_io.h>
#include <spdlog/spdlog.h>
#include <znzlib.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "imflow/errors.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/io/nifti.hpp"
#include "luminance.hpp"
#include "nifti_gzip_data.hpp"
#include "nifti_header_start.hpp"
#include "nifti_slice.hpp"
#include "nifti_volume_cache.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
std::atomic<int> slice_axis{2};

struct NiftiFree {
  void operator()(nifti_image* image) const { nifti_image_free(image); }
};
using NiftiPtr = std::unique_ptr<nifti_image, NiftiFree>;

bool is_gzip(const fs::path& path) { return name_ends_with(path, ".gz"); }

// NIfTI-1 pairs ("ni1") and Analyze 7.5 keep the header in X.hdr and the voxels in X.img.
bool is_pair_header(const fs::path& path) { return name_ends_with(path, ".hdr") || name_ends_with(path, ".hdr.gz"); }

NiftiPtr open_header(const fs::path& path) {
  static std::once_flag quiet;
  std::call_once(quiet, [] { nifti_set_debug_level(0); });  // our exceptions say what went wrong
  std::error_code error;
  if (!fs::is_regular_file(path, error)) throw InputError(path.string() + ": no such NIfTI file");
  if (fs::file_size(path, error) == 0 && !error) throw InputError(path.string() + ": empty file (0 bytes), not a NIfTI image");
  if (is_pair_header(path) && !nifti_pair_image(path)) {
    throw InputError(path.string() + ": header of a .hdr/.img pair whose data file (" + path.stem().string() +
                     ".img or .img.gz) is missing");
  }
  NiftiPtr image(nifti_image_read(path.c_str(), 0));
  if (!image) throw InputError(path.string() + ": not a readable NIfTI-1, NIfTI-2 or Analyze 7.5 file (bad or truncated header)");
  return image;
}

bool supported(int datatype) {
  switch (datatype) {
    case DT_UINT8: case DT_INT8: case DT_INT16: case DT_UINT16: case DT_INT32: case DT_UINT32: case DT_INT64:
    case DT_UINT64: case DT_FLOAT32: case DT_FLOAT64: case DT_RGB24: case DT_RGBA32: return true;
    default: return false;
  }
}

bool is_colour(int datatype) { return datatype == DT_RGB24 || datatype == DT_RGBA32; }

// CIFTI-2 (e.g. HCP .dtseries.nii) is NIfTI-2 holding a matrix (1 x 1 x 1 x 1 x time x grayordinates),
// its intent codes 3000-3099 (NIFTI_INTENT_CONNECTIVITY_*): millions of 1 x 1 "slices", not images.
bool is_cifti(const nifti_image& image) { return image.intent_code >= 3000 && image.intent_code < 3100; }

// SPM's Analyze 7.5 scaling, which nifticlib leaves out: funused1 (where NIfTI-1 keeps scl_slope)
// scales the stored values when finite and non-zero, plus funused2 (scl_inter's place) when finite;
// nibabel (Spm2AnalyzeImage), SPM and MRIcron read these files so.
void spm_scaling(const fs::path& path, NiftiInfo& info) {
  int swapped = 0;
  nifti_1_header* header = nifti_read_n1_hdr(path.c_str(), &swapped, 0);
  if (header == nullptr) return;
  const float slope = header->scl_slope, inter = header->scl_inter;
  std::free(header);
  if (!std::isfinite(slope) || slope == 0.0f) return;
  info.slope = slope;
  info.inter = std::isfinite(inter) ? inter : 0.0;
}

NiftiInfo info_of(const nifti_image& image, const fs::path& path) {
  NiftiInfo info;
  if (is_cifti(image)) {
    throw InputError(path.string() + ": CIFTI-2 file (intent code " + std::to_string(image.intent_code) +
                     "): a matrix over brain coordinates, not image slices");
  }
  const int ndim = image.dim[0];
  if (ndim < 2 || ndim > 7) {
    throw InputError(path.string() + ": NIfTI dim[0] = " + std::to_string(ndim) + " (expected 2 to 7 dimensions)");
  }
  for (int d = 0; d < ndim; ++d) {
    if (image.dim[d + 1] < 1) {
      throw InputError(path.string() + ": NIfTI dim[" + std::to_string(d + 1) + "] = " +
                       std::to_string(image.dim[d + 1]) + " (must be >= 1)");
    }
    info.dims[d] = image.dim[d + 1];
  }
  if (!supported(image.datatype)) {
    throw InputError(path.string() + ": NIfTI datatype " + std::to_string(image.datatype) + " (" +
                     nifti_datatype_string(image.datatype) +
                     ") is not supported (int8/16/32/64, uint8/16/32/64, float32, float64, RGB24, RGBA32)");
  }
  info.datatype = image.datatype;
  info.bytes_per_voxel = image.nbyper;
  info.slope = image.scl_slope;
  info.inter = image.scl_inter;
  if (image.nifti_type == NIFTI_FTYPE_ANALYZE) spm_scaling(path, info);
  return info;
}

// Bytes the header claims for the voxel data, in double: no overflow (NIfTI-2 dims are 64-bit) and
// exact well past any real file size.
double data_bytes(const NiftiInfo& info) {
  double bytes = info.bytes_per_voxel;
  for (int64_t d : info.dims) bytes *= static_cast<double>(d);
  return bytes;
}

// Up to `bytes` of the data file from byte `offset` of the voxel data on; fewer when it ends early.
// A gzip stream read whole (`whole`) is inflated to its end, so that its CRC-32 is checked.
std::vector<unsigned char> read_data_bytes(const NiftiHeader& header, int64_t offset, int64_t bytes, const fs::path& path,
                                           bool whole = false) {
  if (is_gzip(header.data_file)) return detail::read_gzip_data(header.data_file, header.data_offset + offset, bytes, whole, path);
  std::vector<unsigned char> data(static_cast<size_t>(bytes));
  znzFile file = znzopen(header.data_file.c_str(), "rb", 0);
  if (znz_isnull(file)) throw InputError(path.string() + ": cannot open the NIfTI data");
  constexpr size_t chunk = size_t{4} << 20;
  size_t got = 0;
  if (znzseek(file, static_cast<long>(header.data_offset + offset), SEEK_SET) >= 0) {
    while (got < data.size()) {
      const size_t want = std::min(chunk, data.size() - got);
      const size_t read = znzread(data.data() + got, 1, want, file);
      if (read > want) break;  // error
      got += read;
      if (read < want) break;  // end of data
    }
  }
  znzclose(file);
  data.resize(got);
  return data;
}

// Before the first slice of a gzip volume read slice by slice: its whole stream inflated once, so
// that a stream whose damage only its CRC-32 shows fails every slice, not only the last.
void check_stream_once(const NiftiHeader& header, const fs::path& path) {
  GzipStreamCheck& check = *header.stream_check;
  std::call_once(check.once, [&] {
    try {
      detail::check_gzip_stream(header.data_file, path);
    } catch (const InputError& error) {
      check.problem = error.what();
    }
  });
  if (!check.problem.empty()) throw InputError(check.problem);
}

// Slices along `axis` come from the whole data, read once per file into the cache, when the file
// is a gzip stream (which seeks by inflating from its start) or the slice is spread across the
// layout (axis 0 or 1: each spans most of the file).
bool reads_whole(const NiftiHeader& header, int axis) {
  const NiftiInfo& info = header.info;
  const bool contiguous = axis == 2 || (axis == 0 && info.dims[0] == 1) || (axis == 1 && info.dims[1] == 1);
  return is_gzip(header.data_file) || !contiguous;
}

// The file holding the voxels: `path` itself, or the .img or .img.gz of a .hdr/.img pair (which
// nifticlib names .img for a plain .hdr, whichever exists).
fs::path data_file_of(const nifti_image& image, const fs::path& path) {
  if (const std::optional<fs::path> pair = nifti_pair_image(path)) return *pair;
  return image.iname;
}

// What a slice read needs from the header of `path`, parsed once per file version (the cache).
std::shared_ptr<const NiftiHeader> header_of(const fs::path& path) {
  return cached_nifti_header(path, [&] {
    const NiftiPtr image = open_header(path);
    NiftiHeader header;
    header.info = info_of(*image, path);
    header.data_file = data_file_of(*image, path);
    header.data_offset = image->iname_offset;
    header.swap = image->byteorder != nifti_short_order();
    header.swapsize = image->swapsize;
    return header;
  });
}

std::string truncated(const fs::path& path, int64_t plane, int64_t expected, int64_t got) {
  return path.string() + ": cannot read slice " + std::to_string(plane) + " (" + std::to_string(expected) + " bytes expected, " +
         std::to_string(std::max<int64_t>(got, 0)) + " read): truncated or corrupt data";
}

// True the first time it is asked about (path, what): a warning is logged once per file.
bool first_warning(const fs::path& path, const char* what) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  const std::lock_guard lock(mutex);
  return warned.insert(path.string() + '\n' + what).second;
}

// Said once per file: its data is too large for input.nifti_cache_mb, so every slice of a .nii.gz
// inflates the stream from its start.
void warn_uncached(const fs::path& path, double data_bytes, bool gzip) {
  if (!first_warning(path, "uncached")) return;
  spdlog::warn("{}: voxel data of {:.1f} MiB exceeds input.nifti_cache_mb ({:.1f} MiB): each slice is read on its own{}", path.string(),
               data_bytes / 1048576.0, static_cast<double>(nifti_cache_bytes()) / 1048576.0,
               gzip ? ", inflating the gzip stream from its start (slow; raise nifti_cache_mb or gunzip the file)" : "");
}

// Stored values (already in this machine's byte order) to float, scaled when scl_slope is set.
template <typename T>
void convert(const unsigned char* raw, int64_t count, bool scale, double slope, double inter, float* out) {
  for (int64_t i = 0; i < count; ++i) {
    T stored;
    std::memcpy(&stored, raw + i * sizeof(T), sizeof(T));
    const double value = static_cast<double>(stored);
    out[i] = static_cast<float>(scale ? value * slope + inter : value);
  }
}
}  // namespace

void set_nifti_slice_axis(int axis) {
  if (axis < 0 || axis > 2) throw ConfigError("nifti_axis must be 0, 1 or 2");
  slice_axis = axis;
}
int nifti_slice_axis() { return slice_axis; }

int64_t NiftiInfo::slice_width(int axis) const { return axis == 0 ? dims[1] : dims[0]; }
int64_t NiftiInfo::slice_height(int axis) const { return axis == 2 ? dims[1] : dims[2]; }
int64_t NiftiInfo::slices(int axis) const { return dims[axis] * dims[3] * dims[4] * dims[5] * dims[6]; }

int NiftiInfo::bit_depth() const {
  if (is_colour(datatype)) return 8;  // scl_slope does not apply to colour
  const bool unscaled = slope == 0.0 || !std::isfinite(slope) || (slope == 1.0 && inter == 0.0);
  if (!unscaled) return 0;
  if (datatype == DT_UINT8) return 8;
  if (datatype == DT_INT16 || datatype == DT_UINT16) return 16;
  return 0;
}

std::optional<fs::path> nifti_pair_image(const fs::path& path) {
  if (!is_pair_header(path)) return std::nullopt;
  fs::path stem = path;
  if (name_ends_with(stem, ".gz")) stem.replace_extension();
  std::error_code error;
  for (const char* suffix : {".img", ".img.gz", ".IMG", ".IMG.GZ"}) {
    fs::path image = fs::path(stem).replace_extension(suffix);
    if (fs::is_regular_file(image, error)) return image;
  }
  return std::nullopt;
}

NiftiInfo scan_nifti(const fs::path& path) {
  // Once per file, not per slice; a missing or empty file is open_header's to name.
  // The header's first fields (dims, datatype, magic, a single file's vox_offset, which nifticlib
  // would take as it is: 0, negative or NaN would read header bytes as voxels) are checked first.
  std::error_code missing;
  if (fs::is_regular_file(path, missing) && fs::file_size(path, missing) > 0) detail::check_nifti_header_start(path);
  const NiftiPtr image = open_header(path);
  const NiftiInfo info = info_of(*image, path);
  const double needed = data_bytes(info) + static_cast<double>(std::max<int64_t>(image->iname_offset, 0));
  const fs::path data_file = data_file_of(*image, path);
  std::error_code error;
  const uint64_t file_size = fs::file_size(data_file, error);
  if (error) throw InputError(data_file.string() + ": cannot stat: " + error.message());
  // Deflate expands at most ~1032:1, so a .nii.gz cannot hold more than this (bomb guard).
  const bool gzip = is_gzip(data_file);
  const double capacity = gzip ? static_cast<double>(file_size) * 1100.0 + 65536.0 : static_cast<double>(file_size);
  if (needed > capacity) {
    char claimed[40];  // every digit up to 1e15 bytes; beyond, "4.056e+31" (64-bit NIfTI-2 dims reach 1e130)
    std::snprintf(claimed, sizeof claimed, needed < 1e15 ? "%.0f" : "%.4g", needed);
    throw InputError(path.string() + ": NIfTI header claims " + claimed + " bytes (dims " +
                     std::to_string(info.dims[0]) + "x" + std::to_string(info.dims[1]) + "x" +
                     std::to_string(info.dims[2]) + "...) but " + (data_file == path ? "the file" : data_file.filename().string()) +
                     " has only " + std::to_string(file_size) + " bytes" + (gzip ? " compressed" : "") + ": truncated or corrupt");
  }
  return info;
}

bool prefetch_nifti(const fs::path& path, int axis) {
  const std::shared_ptr<const NiftiHeader> header = header_of(path);
  if (!reads_whole(*header, axis)) return false;
  const double whole = data_bytes(header->info);
  return prefetch_nifti_volume(header->data_file, static_cast<uint64_t>(whole),
                               [&] { return read_data_bytes(*header, 0, static_cast<int64_t>(whole), path, true); });
}

int64_t read_nifti_slice(const fs::path& path, int axis, int64_t plane, ImageBuffer& out, const ReadLimits& limits) {
  const std::shared_ptr<const NiftiHeader> header = header_of(path);
  const NiftiInfo& info = header->info;
  const int64_t width = info.slice_width(axis), height = info.slice_height(axis);
  if (width * height > limits.max_pixels) {
    throw InputError(path.string() + ": NIfTI slice of " + std::to_string(width) + "x" + std::to_string(height) +
                     " pixels exceeds the limit of " + std::to_string(limits.max_pixels) + " pixels per image");
  }
  if (plane < 0 || plane >= info.slices(axis)) {
    throw InputError(path.string() + ": slice " + std::to_string(plane) + " out of range (the file has " +
                     std::to_string(info.slices(axis)) + " along axis " + std::to_string(axis) + ")");
  }
  int64_t start[7] = {0, 0, 0, 0, 0, 0, 0};
  int64_t size[7];
  for (int d = 0; d < 7; ++d) size[d] = info.dims[d];
  start[axis] = plane % info.dims[axis];
  size[axis] = 1;
  int64_t outer = plane / info.dims[axis];  // index over dims 4..7
  for (int d = 3; d < 7; ++d) {
    start[d] = outer % info.dims[d];
    size[d] = 1;
    outer /= info.dims[d];
  }
  const int64_t bpv = info.bytes_per_voxel;
  const int64_t stored = width * height * bpv;
  const SliceSpan span = slice_span(info, start, size, axis);
  // Voxels are read here, not by nifticlib's nifti_read_subregion_image: its nifti_read_buffer sets
  // every non-finite float32/float64 voxel to 0 without a word, so the steps would never see the
  // NaN/Inf that docs/mri.md says fail the slice. A gzip stream seeks by inflating from its start
  // and a slice across the layout spans most of the file, so those read the whole data once per
  // file into the shared cache (nifti_volume_cache.hpp) when it fits the budget.
  const double whole = data_bytes(info);
  std::shared_ptr<const NiftiVolumeBytes> volume;
  if (reads_whole(*header, axis)) {
    volume = cached_nifti_volume(header->data_file, static_cast<uint64_t>(whole),
                                 [&] { return read_data_bytes(*header, 0, static_cast<int64_t>(whole), path, true); });
    if (!volume && nifti_cache_bytes() > 0) warn_uncached(path, whole, is_gzip(header->data_file));
  }
  std::vector<unsigned char> slice, data;  // the gathered slice (when the data's bytes are not it as they are); the span read
  const unsigned char* raw = nullptr;
  if (volume) {
    const int64_t end = (span.last + 1) * bpv;
    if (static_cast<uint64_t>(end) > volume->size()) {
      throw InputError(truncated(path, plane, span.voxels() * bpv, static_cast<int64_t>(volume->size()) - span.first * bpv));
    }
    raw = gather_slice(volume->data() + span.first * bpv, span, bpv, header->swap, header->swapsize, slice);
  } else {
    if (is_gzip(header->data_file)) check_stream_once(*header, path);
    data = read_data_bytes(*header, span.first * bpv, span.voxels() * bpv, path);
    if (static_cast<int64_t>(data.size()) != span.voxels() * bpv) {
      throw InputError(truncated(path, plane, span.voxels() * bpv, static_cast<int64_t>(data.size())));
    }
    raw = gather_slice(data.data(), span, bpv, header->swap, header->swapsize, slice);
  }
  // In this machine's byte order now (tested with big-endian files).
  const bool scale = info.slope != 0.0 && std::isfinite(info.slope) && std::isfinite(info.inter);
  out.resize(width, height);
  const int64_t n = width * height;
  switch (info.datatype) {
    case DT_UINT8: convert<uint8_t>(raw, n, scale, info.slope, info.inter, out.data()); break;
    case DT_INT8: convert<int8_t>(raw, n, scale, info.slope, info.inter, out.data()); break;
    case DT_INT16: convert<int16_t>(raw, n, scale, info.slope, info.inter, out.data()); break;
    case DT_UINT16: convert<uint16_t>(raw, n, scale, info.slope, info.inter, out.data()); break;
    case DT_INT32: convert<int32_t>(raw, n, scale, info.slope, info.inter, out.data()); break;
    case DT_UINT32: convert<uint32_t>(raw, n, scale, info.slope, info.inter, out.data()); break;
    case DT_INT64: convert<int64_t>(raw, n, scale, info.slope, info.inter, out.data()); break;
    case DT_UINT64: convert<uint64_t>(raw, n, scale, info.slope, info.inter, out.data()); break;
    case DT_FLOAT32: convert<float>(raw, n, scale, info.slope, info.inter, out.data()); break;
    case DT_FLOAT64: convert<double>(raw, n, scale, info.slope, info.inter, out.data()); break;
    default:  // RGB24, RGBA32 to luminance as colour PNGs; scl_slope does not apply to them (NIfTI-1 standard)
      if (detail::interleaved_to_gray(raw, static_cast<int>(info.bytes_per_voxel), n, out.data()) && first_warning(path, "colour")) {
        spdlog::warn("{}: colour NIfTI ({}) converted to luminance 0.299 R + 0.587 G + 0.114 B", path.string(),
                     nifti_datatype_string(info.datatype));
      }
      break;
  }
  return stored;
}

}  // namespace imflow
