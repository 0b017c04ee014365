// Helpers for the MRI tests: NIfTI-1 files written byte by byte (any datatype, byte order,
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

namespace test {

struct NiftiSpec {
  std::vector<int16_t> dims;  // nx, ny, nz, ...
  int16_t datatype = 2;       // DT_UINT8
  int16_t bitpix = 8;
  float slope = 0.0f, inter = 0.0f;
  bool big_endian = false;
  bool gzip = false;
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

// A single-file NIfTI-1 (.nii / .nii.gz): 348-byte header, 4 zero extension bytes, data at 352.
// `values` are converted to the datatype (T) in file order (i fastest).
template <typename T>
void write_nifti(const std::filesystem::path& path, const NiftiSpec& spec, const std::vector<double>& values,
                 size_t truncate_data_to = SIZE_MAX) {
  std::vector<unsigned char> bytes(352, 0);
  const bool be = spec.big_endian;
  detail::put<int32_t>(bytes, 0, 348, be);
  detail::put<int16_t>(bytes, 40, static_cast<int16_t>(spec.dims.size()), be);
  for (size_t d = 0; d < spec.dims.size(); ++d) detail::put<int16_t>(bytes, 42 + 2 * d, spec.dims[d], be);
  for (size_t d = spec.dims.size(); d < 7; ++d) detail::put<int16_t>(bytes, 42 + 2 * d, 1, be);
  detail::put<int16_t>(bytes, 70, spec.datatype, be);
  detail::put<int16_t>(bytes, 72, spec.bitpix, be);
  for (int d = 0; d < 8; ++d) detail::put<float>(bytes, 76 + 4 * d, 1.0f, be);  // pixdim
  detail::put<float>(bytes, 108, 352.0f, be);                                    // vox_offset
  detail::put<float>(bytes, 112, spec.slope, be);
  detail::put<float>(bytes, 116, spec.inter, be);
  std::memcpy(bytes.data() + 344, "n+1\0", 4);
  for (double v : values) {
    bytes.resize(bytes.size() + sizeof(T));
    detail::put<T>(bytes, bytes.size() - sizeof(T), static_cast<T>(v), be);
  }
  if (truncate_data_to != SIZE_MAX) bytes.resize(352 + truncate_data_to);
  if (spec.gzip) {
    gzFile file = gzopen(path.c_str(), "wb");
    if (file == nullptr) throw std::runtime_error("gzopen failed");
    gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(file);
  } else {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
}

}  // namespace test
