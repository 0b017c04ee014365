// CRC-32 (zlib's) of bytes in memory (libdeflate's, PCLMUL-folded where the CPU has it), and of
// a whole open file: read in cache-sized pieces; a large file (a mosaic's catalog or label map) in
// chunks on all the arena's threads, their CRCs combined.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace imflow {

// crc32_update(crc32_update(0, a), b) == zlib crc32(crc32(0, a), b), for any split.
uint32_t crc32_update(uint32_t crc, const unsigned char* data, size_t size);

struct FileCrc {
  uint64_t size = 0;
  uint32_t crc32 = 0;
};

// The bytes of `fd` from offset 0 to its end (`size` from fstat); `path` names it in errors.
// Throws std::runtime_error when a read fails or the file is shorter than `size`.
FileCrc crc32_of_file(int fd, uint64_t size, const std::filesystem::path& path);

}  // namespace imflow
