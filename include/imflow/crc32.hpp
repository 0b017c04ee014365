// CRC-32 as zlib computes it (libdeflate's, PCLMUL-folded where the CPU has it): continued over
// more bytes, and two pieces' CRCs joined. The manifest records one per output.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace imflow {

// crc32_update(crc32_update(0, a), b) == zlib crc32(crc32(0, a), b), for any split.
uint32_t crc32_update(uint32_t crc, const unsigned char* data, size_t size);
inline uint32_t crc32_update(uint32_t crc, std::string_view bytes) {
  return crc32_update(crc, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

// The CRC of a then b from a's CRC, b's CRC and b's length (zlib's crc32_combine).
uint32_t crc32_join(uint32_t first, uint32_t second, uint64_t second_bytes);

}  // namespace imflow
