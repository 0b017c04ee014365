// crc32_update (the manifest's CRC-32, libdeflate's) is zlib's crc32 for any length, offset,
// starting value and chaining.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/file_crc32.hpp"

using namespace imflow;

TEST_CASE("crc32_update is zlib's crc32", "[manifest]") {
  std::mt19937_64 rng(7);
  std::vector<unsigned char> data(300000);
  for (auto& byte : data) byte = static_cast<unsigned char>(rng());
  long mismatches = 0;
  for (int i = 0; i < 3000; ++i) {
    const size_t offset = rng() % 64, size = i < 2000 ? rng() % 600 : rng() % (data.size() - 64);
    const auto start = static_cast<uint32_t>(i % 3 == 0 ? 0 : rng());
    const auto expected = static_cast<uint32_t>(::crc32_z(start, data.data() + offset, size));
    if (crc32_update(start, data.data() + offset, size) != expected) ++mismatches;
  }
  CHECK(mismatches == 0);
  // Chained in uneven pieces, as a file is read in chunks.
  uint32_t chained = 0;
  for (size_t at = 0, piece = 1; at < data.size(); at += piece, piece = piece * 3 + 17) {
    chained = crc32_update(chained, data.data() + at, std::min(piece, data.size() - at));
  }
  CHECK(chained == static_cast<uint32_t>(::crc32_z(0, data.data(), data.size())));
  const unsigned char check[] = "123456789";  // the CRC-32 check value
  CHECK(crc32_update(0, check, 9) == 0xcbf43926u);
}
