// CRC-32 through libdeflate and zlib (include/imflow/crc32.hpp).
#include "imflow/crc32.hpp"

#include <libdeflate.h>
#include <zlib.h>

namespace imflow {

uint32_t crc32_update(uint32_t crc, const unsigned char* data, size_t size) { return libdeflate_crc32(crc, data, size); }

uint32_t crc32_join(uint32_t first, uint32_t second, uint64_t second_bytes) {
  return static_cast<uint32_t>(crc32_combine64(first, second, static_cast<z_off64_t>(second_bytes)));
}

}  // namespace imflow
