// The shortest decimal that reads back to the same double (Schubfach: R. Giulietti, "The
// Schubfach way to render doubles", 2020) and its text as std::to_chars(first, last, value)
// writes it (%f or %e, whichever is shorter, %f on a tie); one definition for the host and CUDA
// kernels, which write the catalog's CSV rows on the device. The host's CSV writer keeps
// Dragonbox (src/io/shortest_double.cpp), faster there; the tests hold both to std::to_chars.
#pragma once
#include <cstdint>

#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

// The 126-bit powers of ten g(k) = floor(10^-k x 2^-r) + 1 (2^125 <= g < 2^126) for k in
// [kDecimalPowerMin, kDecimalPowerMax], as pairs of 63-bit words (high, low):
// shortest_decimal_powers() (src/kernels/shortest_decimal_powers.cpp) computes them exactly.
inline constexpr int kDecimalPowerMin = -324;
inline constexpr int kDecimalPowerMax = 292;
inline constexpr int kDecimalPowerWords = 2 * (kDecimalPowerMax - kDecimalPowerMin + 1);
const uint64_t* shortest_decimal_powers();

// Room write_shortest_text needs: a sign, 17 digits, the point and "e-308" are 24 characters.
inline constexpr int kShortestTextChars = 24;

struct ShortestDecimal {
  uint64_t significand;  // without trailing zeros
  int exponent;          // the value is significand x 10^exponent
};

namespace shortest {
#ifndef __CUDA_ARCH__
__extension__ typedef unsigned __int128 Uint128;  // GCC's and Clang's 128-bit integer
#endif
inline constexpr int kQMin = -1074;                 // the exponent of the smallest subnormal
inline constexpr uint64_t kCMin = 1ull << 52;      // the hidden bit
inline constexpr uint64_t kMask63 = (1ull << 63) - 1;

// floor(q log10 2), floor(q log10 2 - log10 4/3) and floor(e log2 10) for the exponents of doubles.
IMFLOW_HOST_DEVICE inline int floor_log10_pow2(int q) { return static_cast<int>((q * 661971961083ll) >> 41); }
IMFLOW_HOST_DEVICE inline int floor_log10_three_quarters_pow2(int q) {
  return static_cast<int>((q * 661971961083ll - 274743187321ll) >> 41);
}
IMFLOW_HOST_DEVICE inline int floor_log2_pow10(int e) { return static_cast<int>((e * 913124641741ll) >> 38); }

IMFLOW_HOST_DEVICE inline uint64_t multiply_high(uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__
  return __umul64hi(a, b);
#else
  return static_cast<uint64_t>((static_cast<Uint128>(a) * b) >> 64);
#endif
}

// g x cp / 2^127 (g = g1 2^63 + g0), rounded to odd.
IMFLOW_HOST_DEVICE inline uint64_t round_to_odd(uint64_t g1, uint64_t g0, uint64_t cp) {
  const uint64_t x1 = multiply_high(g0, cp);
  const uint64_t y0 = g1 * cp;
  const uint64_t y1 = multiply_high(g1, cp);
  const uint64_t z = (y0 >> 1) + x1;
  const uint64_t vbp = y1 + (z >> 63);
  return vbp | (((z & kMask63) + kMask63) >> 63);
}

// The decimal closest to c x 2^q among the shortest in its rounding interval (ties to even).
// Giulietti's Java keeps two digits at least (Java's Double.toString); here one may do, which only
// the smallest subnormals reach (s below 100).
IMFLOW_HOST_DEVICE inline ShortestDecimal schubfach(int q, uint64_t c, const uint64_t* powers) {
  const uint64_t out = c & 1;
  const uint64_t cb = c << 2, cbr = cb + 2;
  uint64_t cbl;
  int k;
  if (c != kCMin || q == kQMin) {
    cbl = cb - 2;
    k = floor_log10_pow2(q);
  } else {  // the interval below a power of two is half as wide
    cbl = cb - 1;
    k = floor_log10_three_quarters_pow2(q);
  }
  const int h = q + floor_log2_pow10(-k) + 2;
  const uint64_t g1 = powers[2 * (k - kDecimalPowerMin)], g0 = powers[2 * (k - kDecimalPowerMin) + 1];
  const uint64_t vb = round_to_odd(g1, g0, cb << h);
  const uint64_t vbl = round_to_odd(g1, g0, cbl << h);
  const uint64_t vbr = round_to_odd(g1, g0, cbr << h);
  const uint64_t s = vb >> 2;
  if (s >= 10) {  // one digit fewer, where the interval holds a multiple of 10
    const uint64_t sp10 = 10 * multiply_high(s, 115292150460684698ull << 4);
    const uint64_t tp10 = sp10 + 10;
    const bool upin = vbl + out <= sp10 << 2;
    const bool wpin = (tp10 << 2) + out <= vbr;
    if (upin != wpin) return {upin ? sp10 : tp10, k};
  }
  const uint64_t t = s + 1;
  const bool uin = vbl + out <= s << 2;
  const bool win = (t << 2) + out <= vbr;
  if (uin != win) return {uin ? s : t, k};
  const auto cmp = static_cast<int64_t>(vb - ((s + t) << 1));
  return {cmp < 0 || (cmp == 0 && (s & 1) == 0) ? s : t, k};
}

IMFLOW_HOST_DEVICE inline ShortestDecimal without_trailing_zeros(ShortestDecimal d) {
  if (d.significand % 100000000 == 0) {
    d.significand /= 100000000;
    d.exponent += 8;
  }
  while (d.significand % 10 == 0) {
    d.significand /= 10;
    ++d.exponent;
  }
  return d;
}

IMFLOW_HOST_DEVICE inline int decimal_digits(uint64_t value) {
  int count = 1;
  uint64_t bound = 10;
  while (value >= bound) {
    if (++count == 20) break;
    bound *= 10;
  }
  return count;
}

// The `count` digits of `value` (below 10^count) at out[0, count): 8 at a time from the end by a
// 64-bit division, then in 32-bit arithmetic (a 64-bit division is a long sequence on a GPU).
IMFLOW_HOST_DEVICE inline void write_digits(uint64_t value, int count, char* out) {
  while (count > 9) {
    const uint64_t high = value / 100000000;
    auto low = static_cast<uint32_t>(value - high * 100000000);
    for (int i = count - 1; i >= count - 8; --i) {
      out[i] = static_cast<char>('0' + low % 10);
      low /= 10;
    }
    count -= 8;
    value = high;
  }
  auto rest = static_cast<uint32_t>(value);
  for (int i = count - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + rest % 10);
    rest /= 10;
  }
}

IMFLOW_HOST_DEVICE inline uint64_t double_bits(double value) {
#ifdef __CUDA_ARCH__
  return static_cast<uint64_t>(__double_as_longlong(value));
#else
  return __builtin_bit_cast(uint64_t, value);
#endif
}

// The exact digits of a whole `value` (below 10^22) with `count` digits, at out[0, count).
IMFLOW_HOST_DEVICE inline void write_whole_number(double value, int count, char* out) {
  const uint64_t bits = double_bits(value);
  const uint64_t c = kCMin | (bits & (kCMin - 1));
  const int shift = static_cast<int>((bits >> 52) & 0x7FF) - 1075;  // value = c x 2^shift
  if (shift <= 11) {  // below 2^64
    write_digits(shift >= 0 ? c << shift : c >> -shift, count, out);
    return;
  }
  // c x 2^shift < 2^74 as three 32-bit limbs, divided by 10^9: the quotient fits 64 bits.
  constexpr uint64_t kBillion = 1000000000;
  const uint64_t high = c >> (64 - shift), low = c << shift;
  uint64_t part = ((high % kBillion) << 32) | (low >> 32);
  const uint64_t quotient_high = part / kBillion;
  part = ((part % kBillion) << 32) | (low & 0xFFFFFFFFu);
  const uint64_t quotient = (quotient_high << 32) | (part / kBillion);
  write_digits(quotient, count - 9, out);
  write_digits(part % kBillion, 9, out + count - 9);
}
}  // namespace shortest

// The shortest decimal of a finite, non-zero |value|.
IMFLOW_HOST_DEVICE inline ShortestDecimal shortest_decimal(double value, const uint64_t* powers) {
  using namespace shortest;
  const uint64_t bits = double_bits(value);
  const uint64_t t = bits & (kCMin - 1);
  const int bq = static_cast<int>((bits >> 52) & 0x7FF);
  if (bq != 0) {
    const int mq = -kQMin + 1 - bq;
    const uint64_t c = kCMin | t;
    if (0 < mq && mq < 53) {  // a whole number below 2^53
      const uint64_t f = c >> mq;
      if (f << mq == c) return without_trailing_zeros({f, 0});
    }
    return without_trailing_zeros(schubfach(-mq, c, powers));
  }
  return without_trailing_zeros(schubfach(kQMin, t, powers));  // subnormal
}

// How std::to_chars lays out a finite value: its shortest decimal, %f or %e, and its length.
struct ShortestLayout {
  ShortestDecimal decimal;  // of |value| ({0, 0} for zero)
  int count;                // digits of the significand
  bool negative, fixed;     // a sign; %f rather than %e
  int length;               // characters, the sign included
};

IMFLOW_HOST_DEVICE inline ShortestLayout shortest_layout(double value, const uint64_t* powers) {
  using namespace shortest;
  ShortestLayout t{{0, 0}, 1, (double_bits(value) >> 63) != 0, true, 1};
  if (value != 0.0) {
    t.decimal = shortest_decimal(value < 0.0 ? -value : value, powers);
    t.count = decimal_digits(t.decimal.significand);
    const int before_point = t.count + t.decimal.exponent;  // digits left of the point in %f (<= 0: "0.")
    const int exponent10 = before_point - 1;                 // %e's exponent
    const int exponent_digits = exponent10 >= 100 || exponent10 <= -100 ? 3 : 2;
    const int scientific_length = t.count + (t.count > 1 ? 1 : 0) + 2 + exponent_digits;
    const int fixed_length = t.decimal.exponent >= 0 ? before_point : before_point > 0 ? t.count + 1 : 2 - t.decimal.exponent;
    t.fixed = fixed_length <= scientific_length;
    t.length = t.fixed ? fixed_length : scientific_length;
  }
  t.length += t.negative ? 1 : 0;
  return t;
}

// std::to_chars's text of a finite `value` laid out as `t` says, at `out` (kShortestTextChars of
// room); returns the end.
IMFLOW_HOST_DEVICE inline char* write_shortest_text(char* out, double value, const ShortestLayout& t) {
  using namespace shortest;
  char* const end = out + t.length;
  if (t.negative) *out++ = '-';
  const ShortestDecimal d = t.decimal;
  const int count = t.count, before_point = count + d.exponent;
  if (value == 0.0) {
    *out = '0';
  } else if (t.fixed && d.exponent >= 0) {  // a whole number below 10^22 here: %f writes its exact digits
    write_whole_number(value < 0.0 ? -value : value, before_point, out);
  } else if (t.fixed && before_point > 0) {  // "ddd.ddd"
    write_digits(d.significand, count, out);
    for (int i = count; i > before_point; --i) out[i] = out[i - 1];
    out[before_point] = '.';
  } else if (t.fixed) {  // "0.000ddd"
    out[0] = '0';
    out[1] = '.';
    for (int i = 0; i < -before_point; ++i) out[2 + i] = '0';
    write_digits(d.significand, count, out + 2 - before_point);
  } else {  // "d.ddde-XX"
    write_digits(d.significand, count, out + 1);
    out[0] = out[1];
    out[1] = '.';
    out += count > 1 ? count + 1 : 1;
    const int exponent10 = before_point - 1;
    *out++ = 'e';
    *out++ = exponent10 < 0 ? '-' : '+';
    write_digits(static_cast<uint64_t>(exponent10 < 0 ? -exponent10 : exponent10), static_cast<int>(end - out), out);
  }
  return end;
}

IMFLOW_HOST_DEVICE inline char* write_shortest_text(char* out, double value, const uint64_t* powers) {
  return write_shortest_text(out, value, shortest_layout(value, powers));
}

IMFLOW_HOST_DEVICE inline int integer_text_length(long long value) {
  const uint64_t magnitude = value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  return shortest::decimal_digits(magnitude) + (value < 0 ? 1 : 0);
}

// std::to_chars's text of an integer.
IMFLOW_HOST_DEVICE inline char* write_integer_text(char* out, long long value) {
  if (value < 0) *out++ = '-';
  const uint64_t magnitude = value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  const int count = shortest::decimal_digits(magnitude);
  shortest::write_digits(magnitude, count, out);
  return out + count;
}

}  // namespace imflow::kernels
