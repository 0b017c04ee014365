// write_shortest: Dragonbox's shortest decimal digits (Debian's libdragonbox-dev), made 16 at a
// time in registers (decimal_digits.hpp) and laid out as printf's %f or %e. Whole numbers below
// 2^53 (a catalog's pixel positions, counts, zeros) skip Dragonbox: their own digits are the
// shortest. Larger whole numbers go to std::to_chars: printf's %f writes every digit of their
// exact value, which can be more than the shortest digits (123e22 is 12300000000000001048576).
#include "shortest_double.hpp"

#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <dragonbox/dragonbox.h>

#include "decimal_digits.hpp"

namespace imflow::detail {

namespace {
// "00" "01" .. "99": an exponent's two digits in one lookup.
constexpr std::array<char, 200> kDigitPairs = [] {
  std::array<char, 200> pairs{};
  for (int i = 0; i < 100; ++i) {
    pairs[2 * i] = static_cast<char>('0' + i / 10);
    pairs[2 * i + 1] = static_cast<char>('0' + i % 10);
  }
  return pairs;
}();

constexpr std::array<uint64_t, 18> kPowersOf10 = [] {
  std::array<uint64_t, 18> powers{};
  uint64_t power = 1;
  for (uint64_t& p : powers) {
    p = power;
    power *= 10;
  }
  return powers;
}();

// The 17 digits of `value` (1 <= value < 10^17, a double's shortest significand), zero-padded,
// at out[0..17); returns how many of them are the significand's (the rest are leading zeros).
int write_significand(uint64_t value, char* out) {
  const uint64_t high = value / 100000000;
  out[0] = static_cast<char>('0' + high / 100000000);
  write_16_digits(static_cast<uint32_t>(high % 100000000), static_cast<uint32_t>(value % 100000000), out + 1);
  // floor(log10) from the bit width, then one comparison.
  int count = ((std::bit_width(value) * 1233) >> 12) + 1;
  if (value < kPowersOf10[count - 1]) --count;
  return count;
}
}  // namespace

namespace {
// significand x 10^exponent (significand without trailing zeros, 1 <= significand < 10^17) as
// printf's %f or %e, whichever is shorter (%f on a tie), as std::to_chars lays out its shortest
// digits. A positive exponent comes from whole numbers below 2^53 only (their %f is their digits).
char* lay_out(char* out, uint64_t significand, int exponent, bool negative) {
  // The digits are text[17 - count, 17), followed by slack: the copies below move fixed sizes
  // (which the compiler inlines) and what they write past the number is overwritten or beyond its
  // end.
  char text[40];
  const int count = write_significand(significand, text);
  const char* const digits = text + 17 - count;
  const int before_point = count + exponent;  // digits left of the point in %f (<= 0: "0.")
  const int exponent10 = before_point - 1;    // %e's exponent
  const int exponent_digits = std::abs(exponent10) >= 100 ? 3 : 2;
  const int scientific_length = count + (count > 1 ? 1 : 0) + 2 + exponent_digits;
  const int fixed_length = exponent >= 0 ? before_point : before_point > 0 ? count + 1 : 2 - exponent;
  *out = '-';
  out += negative;
  if (fixed_length <= scientific_length) {
    if (exponent >= 0) {  // "ddd000": at most 5 zeros, as %e is shorter with more
      std::memcpy(out, digits, 17);
      std::memcpy(out + count, "00000000", 8);
      return out + fixed_length;
    }
    if (before_point > 0) {  // "ddd.ddd"
      std::memcpy(out, digits, 17);
      out[before_point] = '.';
      std::memcpy(out + before_point + 1, digits + before_point, 16);
      return out + count + 1;
    }
    // "0.000ddd": fixed_length <= scientific_length <= 23 keeps the zeros after the point below 6.
    std::memcpy(out, "0.000000", 8);
    std::memcpy(out + 2 - before_point, digits, 17);
    return out + fixed_length;
  }
  out[0] = digits[0];  // "d.ddde-XX"
  out[1] = '.';
  std::memcpy(out + 2, digits + 1, 16);
  out += count > 1 ? count + 1 : 1;
  *out++ = 'e';
  *out++ = exponent10 < 0 ? '-' : '+';
  int magnitude = std::abs(exponent10);
  if (exponent_digits == 3) {
    *out++ = static_cast<char>('0' + magnitude / 100);
    magnitude %= 100;
  }
  std::memcpy(out, &kDigitPairs[2 * magnitude], 2);
  return out + 2;
}
}  // namespace

char* write_shortest(char* out, double value) {
  const double magnitude = std::fabs(value);
  if (magnitude < 0x1p53) {
    // Below 2^53 neighbouring doubles are at most 1 apart, so a whole number's shortest digits
    // are its own (without trailing zeros).
    uint64_t whole = static_cast<uint64_t>(magnitude);
    if (static_cast<double>(whole) == magnitude) {
      if (whole == 0) {
        *out = '-';
        out += std::signbit(value);
        *out = '0';
        return out + 1;
      }
      int exponent = 0;
      while (whole % 10 == 0) {
        whole /= 10;
        ++exponent;
      }
      return lay_out(out, whole, exponent, value < 0);
    }
  } else if (!std::isfinite(value)) {
    return std::to_chars(out, out + kShortestDoubleChars, value).ptr;
  }
  const auto decimal = jkj::dragonbox::to_decimal(value);
  if (decimal.exponent >= 0) return std::to_chars(out, out + kShortestDoubleChars, value).ptr;
  return lay_out(out, decimal.significand, decimal.exponent, decimal.is_negative);
}

}  // namespace imflow::detail
