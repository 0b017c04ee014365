// check_nifti_header_start: the header's first 348 bytes through zlib (plain files read as they are).
#include "nifti_header_start.hpp"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "imflow/errors.hpp"
#include "imflow/io/input_format.hpp"

namespace imflow::detail {

namespace fs = std::filesystem;

void check_nifti_header_start(const fs::path& path) {
  // sizeof_hdr, dim[8] (int16 at 40 in NIfTI-1, int64 at 16 in NIfTI-2) and the magic (at 344 in
  // NIfTI-1, at 4 in NIfTI-2).
  unsigned char head[348] = {};
  int got = -1;
  std::string gzip_error;
  if (gzFile file = gzopen(path.c_str(), "rb"); file != nullptr) {
    got = gzread(file, head, sizeof head);
    int code = Z_OK;
    if (got < 0) {
      gzip_error = gzerror(file, &code);  // "PATH: reason"
      if (gzip_error.starts_with(path.string() + ": ")) gzip_error.erase(0, path.string().size() + 2);
    }
    gzclose(file);
  }
  if (got < 0) {
    throw InputError(path.string() + ": " + (gzip_error.empty() ? std::string("cannot be read") : "corrupt gzip stream (" + gzip_error + ")"));
  }
  const auto have = static_cast<size_t>(got);
  auto number = [&](size_t at, size_t bytes, bool big) {
    uint64_t value = 0;
    for (size_t i = 0; i < bytes; ++i) value |= uint64_t{head[at + (big ? bytes - 1 - i : i)]} << (8 * i);
    return bytes == 2 ? int64_t{static_cast<int16_t>(value)} : static_cast<int64_t>(value);
  };
  for (bool big : {false, true}) {
    const int64_t size = have >= 4 ? number(0, 4, big) : 0;
    if (size != 348 && size != 540) continue;
    const bool nifti2 = size == 540;
    const size_t dims_at = nifti2 ? 16 : 40, field = nifti2 ? 8 : 2;
    if (have < dims_at + 8 * field) return;  // a short header: nifticlib's to refuse
    const std::string kind = nifti2 ? "NIfTI-2" : "NIfTI-1 or Analyze";
    const int64_t dims = number(dims_at, field, big);
    if (dims < 1 || dims > 7) {
      throw InputError(path.string() + ": " + kind + " header with dim[0] = " + std::to_string(dims) + " (expected 1 to 7)");
    }
    for (int64_t d = 1; d <= dims; ++d) {
      const int64_t length = number(dims_at + static_cast<size_t>(d) * field, field, big);
      if (length < 1) {
        throw InputError(path.string() + ": " + kind + " header with dim[" + std::to_string(d) + "] = " +
                         std::to_string(length) + " (must be >= 1)");
      }
    }
    // A code that is no NIfTI datatype (nifticlib would print a bare "bad datatype" line).
    const int64_t datatype = number(nifti2 ? 12 : 70, 2, big);
    constexpr int64_t kCodes[] = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 768, 1024, 1280, 1536, 1792, 2048, 2304};
    if (std::find(std::begin(kCodes), std::end(kCodes), datatype) == std::end(kCodes)) {
      throw InputError(path.string() + ": " + kind + " header with datatype " + std::to_string(datatype) +
                       ", which is no NIfTI datatype code: a damaged header");
    }
    // nifticlib reads a single file without NIfTI's magic as Analyze 7.5, dropping its scaling;
    // Analyze comes as a .hdr/.img pair, so such a file is a damaged NIfTI one.
    const size_t magic_at = nifti2 ? 4 : 344;
    const bool pair = name_ends_with(path, ".hdr") || name_ends_with(path, ".hdr.gz");
    if (!pair && have >= magic_at + 4 && std::memcmp(head + magic_at, nifti2 ? "n+2" : "n+1", 4) != 0) {
      throw InputError(path.string() + ": " + (nifti2 ? "NIfTI-2" : "NIfTI-1") + " header without its magic \"" + (nifti2 ? "n+2" : "n+1") +
                       "\" at byte " + std::to_string(magic_at) + ": a damaged file (Analyze 7.5 comes as a .hdr/.img pair)");
    }
    // A single file's voxels start after its header (vox_offset float32 at 108, NIfTI-2 int64 at 168).
    if (!pair && have >= (nifti2 ? 176u : 112u)) {
      const double offset = nifti2 ? static_cast<double>(number(168, 8, big))
                                   : std::bit_cast<float>(static_cast<uint32_t>(number(108, 4, big)));
      const double least = nifti2 ? 544 : 352;
      char text[32];
      std::snprintf(text, sizeof text, "%g", offset);
      if (std::isnan(offset)) throw InputError(path.string() + ": NIfTI vox_offset NaN is not a byte offset: corrupt header");
      if (offset < least) {
        throw InputError(path.string() + ": NIfTI vox_offset " + text + " puts the voxels inside the header (at least " +
                         (nifti2 ? "544" : "352") + " in a single file): corrupt header");
      }
      std::error_code error;
      const auto bytes = fs::file_size(path, error);
      if (!error && !name_ends_with(path, ".gz") && offset > static_cast<double>(bytes)) {
        throw InputError(path.string() + ": NIfTI vox_offset " + text + " is past the end of the file (" +
                         std::to_string(bytes) + " bytes): corrupt header");
      }
    }
    return;
  }
  throw InputError(path.string() + ": not a NIfTI-1, NIfTI-2 or Analyze 7.5 header (" +
                   (have < 4 ? std::string("shorter than 4 bytes") : "sizeof_hdr is neither 348 nor 540 in either byte order") + ")");
}

}  // namespace imflow::detail
