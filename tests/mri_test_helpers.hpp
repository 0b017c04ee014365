// Helpers for the MRI tests: NIfTI-1 and NIfTI-2 files written byte by byte (any datatype, byte order,
// scaling, optionally gzipped) and small matrix utilities.
#pragma once
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "imflow/io/nifti.hpp"

namespace test {

// Sets the NIfTI volume cache's budget for a test and restores the one before when it ends.
struct NiftiCacheBudget {
  explicit NiftiCacheBudget(uint64_t bytes) : before(imflow::nifti_cache_bytes()) { imflow::set_nifti_cache_bytes(bytes); }
  ~NiftiCacheBudget() { imflow::set_nifti_cache_bytes(before); }
  const uint64_t before;
};

struct NiftiSpec {
  std::vector<int64_t> dims;  // nx, ny, nz, ... (NIfTI-1 stores them as int16)
  int16_t datatype = 2;       // DT_UINT8
  int16_t bitpix = 8;
  float slope = 0.0f, inter = 0.0f;
  bool big_endian = false;
  bool gzip = false;
  int version = 1;  // 1: 348-byte header, data at 352; 2: 540-byte header, data at 544
  int16_t intent_code = 0;
};

namespace detail {
template <typename T>
void put(std::vector<unsigned char>& bytes, size_t at, T value, bool big_endian) {
  unsigned char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  if (big_endian) std::reverse(raw, raw + sizeof(T));
  std::memcpy(bytes.data() + at, raw, sizeof(T));
}
}  // namespace detail

// The header and 4 zero extension bytes of a single-file NIfTI-1 (348 bytes, data at 352) or
// NIfTI-2 (540 bytes, data at 544; 64-bit dims, double scaling).
inline std::vector<unsigned char> nifti_header(const NiftiSpec& spec) {
  const bool be = spec.big_endian;
  std::vector<int64_t> dims = spec.dims;
  dims.resize(7, 1);
  if (spec.version == 2) {
    std::vector<unsigned char> bytes(544, 0);
    detail::put<int32_t>(bytes, 0, 540, be);
    std::memcpy(bytes.data() + 4, "n+2\0\r\n\032\n", 8);
    detail::put<int16_t>(bytes, 12, spec.datatype, be);
    detail::put<int16_t>(bytes, 14, spec.bitpix, be);
    detail::put<int64_t>(bytes, 16, static_cast<int64_t>(spec.dims.size()), be);
    for (size_t d = 0; d < 7; ++d) detail::put<int64_t>(bytes, 24 + 8 * d, dims[d], be);
    for (int d = 0; d < 8; ++d) detail::put<double>(bytes, 104 + 8 * d, 1.0, be);  // pixdim
    detail::put<int64_t>(bytes, 168, 544, be);                                     // vox_offset
    detail::put<double>(bytes, 176, spec.slope, be);
    detail::put<double>(bytes, 184, spec.inter, be);
    detail::put<int32_t>(bytes, 504, spec.intent_code, be);
    return bytes;
  }
  std::vector<unsigned char> bytes(352, 0);
  detail::put<int32_t>(bytes, 0, 348, be);
  detail::put<int16_t>(bytes, 40, static_cast<int16_t>(spec.dims.size()), be);
  for (size_t d = 0; d < 7; ++d) detail::put<int16_t>(bytes, 42 + 2 * d, static_cast<int16_t>(dims[d]), be);
  detail::put<int16_t>(bytes, 68, spec.intent_code, be);
  detail::put<int16_t>(bytes, 70, spec.datatype, be);
  detail::put<int16_t>(bytes, 72, spec.bitpix, be);
  for (int d = 0; d < 8; ++d) detail::put<float>(bytes, 76 + 4 * d, 1.0f, be);  // pixdim
  detail::put<float>(bytes, 108, 352.0f, be);                                    // vox_offset
  detail::put<float>(bytes, 112, spec.slope, be);
  detail::put<float>(bytes, 116, spec.inter, be);
  std::memcpy(bytes.data() + 344, "n+1\0", 4);
  return bytes;
}

// A single-file NIfTI (.nii / .nii.gz) of spec.version. `values` are converted to the datatype (T)
// in file order (i fastest).
template <typename T>
void write_nifti(const std::filesystem::path& path, const NiftiSpec& spec, const std::vector<double>& values,
                 size_t truncate_data_to = SIZE_MAX) {
  std::vector<unsigned char> bytes = nifti_header(spec);
  const size_t data_at = bytes.size();
  const bool be = spec.big_endian;
  for (double v : values) {
    bytes.resize(bytes.size() + sizeof(T));
    detail::put<T>(bytes, bytes.size() - sizeof(T), static_cast<T>(v), be);
  }
  if (truncate_data_to != SIZE_MAX) bytes.resize(data_at + truncate_data_to);
  if (spec.gzip) {
    gzFile file = gzopen(path.c_str(), "wb");
    if (file == nullptr) throw std::runtime_error("gzopen failed");
    gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(file);
  } else {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
}

// Splits the single file `nii` (352-byte prefix: header + extension flag) into STEM.hdr and
// STEM.img with `magic` ("ni1" for a NIfTI-1 pair, "" for Analyze 7.5), vox_offset 0.
inline void split_nifti_pair(const std::filesystem::path& nii, const std::filesystem::path& stem, const std::string& magic) {
  std::ifstream in(nii, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string header = bytes.substr(0, 348);
  header.replace(108, 4, std::string(4, '\0'));  // vox_offset 0.0f (either byte order)
  header.replace(344, 4, std::string(4, '\0'));
  header.replace(344, magic.size(), magic);
  std::ofstream(stem.string() + ".hdr", std::ios::binary) << header;
  std::ofstream(stem.string() + ".img", std::ios::binary) << bytes.substr(352);
}

}  // namespace test
