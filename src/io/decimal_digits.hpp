// Sixteen decimal digits of a number below 10^16 as ASCII, zero-padded, computed in registers:
// two 8-digit halves at once in SSE2's 16-bit lanes on x86-64, else in the 16-bit fields of a
// 64-bit word (8 digits per word). The shortest-double writer (shortest_double.cpp) builds its
// text from them.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace imflow::detail {

// The 8 digits of `value` (< 10^8), the first in the word's lowest byte (its first in memory on
// a little-endian machine).
inline uint64_t eight_digits_in_word(uint32_t value) {
  // Fields of 32 bits: the two 4-digit halves; then of 16 bits: 2 digits each; then of 8: one.
  // Each division by 100 and 10 is a multiply and shift exact for the field's range.
  const uint64_t fours = (value / 10000) | (static_cast<uint64_t>(value % 10000) << 32);
  const uint64_t hundreds = ((fours * 10486) >> 20) & 0x0000007F0000007Full;
  const uint64_t pairs = hundreds | ((fours - hundreds * 100) << 16);
  const uint64_t tens = ((pairs * 103) >> 10) & 0x000F000F000F000Full;
  return (tens | ((pairs - tens * 10) << 8)) | 0x3030303030303030ull;
}

// The 16 digits of high * 10^8 + low (both < 10^8) at out[0..16), without SIMD.
inline void write_16_digits_portable(uint32_t high, uint32_t low, char* out) {
  const uint64_t first = eight_digits_in_word(high), second = eight_digits_in_word(low);
  std::memcpy(out, &first, 8);
  std::memcpy(out + 8, &second, 8);
}

#if defined(__SSE2__)
// The same with both halves in one register: 64-bit lanes, then 32-bit lanes of 4 digits,
// 16-bit lanes of 2, bytes of 1; one 16-byte store.
inline void write_16_digits_sse2(uint32_t high, uint32_t low, char* out) {
  const __m128i halves = _mm_set_epi64x(low, high);
  // x / 10000 = (x * 0xd1b71759) >> 45 for x < 10^8.
  const __m128i upper = _mm_srli_epi64(_mm_mul_epu32(halves, _mm_set1_epi32(static_cast<int>(0xd1b71759u))), 45);
  const __m128i lower = _mm_sub_epi32(halves, _mm_mul_epu32(upper, _mm_set1_epi32(10000)));
  const __m128i fours = _mm_or_si128(upper, _mm_slli_epi64(lower, 32));
  // x / 100 = ((x * 5243) >> 16) >> 3 for x < 10^4; x / 10 = (x * 6554) >> 16 for x < 100.
  const __m128i hundreds = _mm_srli_epi16(_mm_mulhi_epu16(fours, _mm_set1_epi16(5243)), 3);
  const __m128i below_hundred = _mm_sub_epi16(fours, _mm_mullo_epi16(hundreds, _mm_set1_epi16(100)));
  const __m128i pairs = _mm_or_si128(hundreds, _mm_slli_epi32(below_hundred, 16));
  const __m128i tens = _mm_mulhi_epu16(pairs, _mm_set1_epi16(6554));
  const __m128i ones = _mm_sub_epi16(pairs, _mm_mullo_epi16(tens, _mm_set1_epi16(10)));
  const __m128i digits = _mm_add_epi8(_mm_or_si128(tens, _mm_slli_epi16(ones, 8)), _mm_set1_epi8('0'));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), digits);
}
#endif

inline void write_16_digits(uint32_t high, uint32_t low, char* out) {
#if defined(__SSE2__)
  write_16_digits_sse2(high, low, out);
#else
  write_16_digits_portable(high, low, out);
#endif
}

}  // namespace imflow::detail
