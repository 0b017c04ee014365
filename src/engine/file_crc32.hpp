// CRC-32 (zlib's, imflow/crc32.hpp) of a whole open file: read in cache-sized pieces; a large file
// (a mosaic's label map) in chunks on all the arena's threads, their CRCs joined.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "imflow/crc32.hpp"

namespace imflow {


struct FileCrc {
  uint64_t size = 0;
  uint32_t crc32 = 0;
};

// The bytes of `fd` from offset 0 to its end (`size` from fstat); `path` names it in errors.
// Throws std::runtime_error when a read fails or the file is shorter than `size`.
FileCrc crc32_of_file(int fd, uint64_t size, const std::filesystem::path& path);

}  // namespace imflow
