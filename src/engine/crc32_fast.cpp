// CRC-32 (zlib's) by folding 64-byte blocks with PCLMULQDQ; zlib's crc32_z for short inputs,
// for the last <= 31 bytes, and on CPUs without PCLMULQDQ.
#include "crc32_fast.hpp"

#include <zlib.h>

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define IMFLOW_CRC32_PCLMUL 1
#endif

namespace imflow {

namespace {
uint32_t crc32_zlib(uint32_t crc, const unsigned char* data, size_t size) {
  return static_cast<uint32_t>(::crc32_z(crc, data, size));
}

#ifdef IMFLOW_CRC32_PCLMUL
#define IMFLOW_PCLMUL_TARGET __attribute__((target("pclmul,sse4.1")))

// x (128 bits) carried forward by the distance the constants k stand for, reflected domain.
IMFLOW_PCLMUL_TARGET inline __m128i fold(__m128i x, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

IMFLOW_PCLMUL_TARGET inline __m128i load(const unsigned char* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Four 128-bit lanes fold 64 bytes at a time; the lanes fold into one, then 16 bytes at a time.
// The folded 16 bytes followed by the unfolded tail have the same raw CRC (no pre/post
// inversion) as the whole input, and zlib's crc32(0xffffffff, ...) is exactly that raw CRC.
// Constants: x^(4*128+32), x^(4*128-32), x^(128+32), x^(128-32) mod the CRC-32 polynomial,
// bit-reflected (Intel, "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ").
IMFLOW_PCLMUL_TARGET uint32_t crc32_pclmul(uint32_t crc, const unsigned char* data, size_t size) {
  const __m128i k512 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
  const __m128i k128 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
  __m128i x0 = _mm_xor_si128(load(data), _mm_cvtsi32_si128(static_cast<int>(~crc)));
  __m128i x1 = load(data + 16), x2 = load(data + 32), x3 = load(data + 48);
  data += 64;
  size -= 64;
  for (; size >= 64; data += 64, size -= 64) {
    x0 = _mm_xor_si128(fold(x0, k512), load(data));
    x1 = _mm_xor_si128(fold(x1, k512), load(data + 16));
    x2 = _mm_xor_si128(fold(x2, k512), load(data + 32));
    x3 = _mm_xor_si128(fold(x3, k512), load(data + 48));
  }
  x0 = _mm_xor_si128(fold(x0, k128), x1);
  x0 = _mm_xor_si128(fold(x0, k128), x2);
  x0 = _mm_xor_si128(fold(x0, k128), x3);
  for (; size >= 16; data += 16, size -= 16) x0 = _mm_xor_si128(fold(x0, k128), load(data));
  unsigned char rest[32];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(rest), x0);
  std::memcpy(rest + 16, data, size);
  return crc32_zlib(0xffffffffu, rest, 16 + size);
}

bool have_pclmul() {
  static const bool have = [] {
    __builtin_cpu_init();  // may run before libgcc's own constructor has
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  }();
  return have;
}
#endif
}  // namespace

uint32_t crc32_update(uint32_t crc, const unsigned char* data, size_t size) {
#ifdef IMFLOW_CRC32_PCLMUL
  if (size >= 64 && have_pclmul()) return crc32_pclmul(crc, data, size);
#endif
  return crc32_zlib(crc, data, size);
}

}  // namespace imflow
