// Schubfach's table of 126-bit powers of ten (include/imflow/kernels/shortest_decimal.hpp),
// computed once, exactly, with arbitrary-precision integers: g(k) = floor(10^-k x 2^-r) + 1 with
// r = floor(-k log2 10) - 125.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "imflow/kernels/shortest_decimal.hpp"

namespace imflow::kernels {

namespace {
// A non-negative integer as 32-bit limbs, the lowest first.
using Limbs = std::vector<uint32_t>;

bool bit_at(const Limbs& n, int bit) {
  return bit >= 0 && bit / 32 < static_cast<int>(n.size()) && ((n[bit / 32] >> (bit % 32)) & 1) != 0;
}

void multiply_by_5(Limbs& n) {
  uint64_t carry = 0;
  for (uint32_t& limb : n) {
    const uint64_t product = static_cast<uint64_t>(limb) * 5 + carry;
    limb = static_cast<uint32_t>(product);
    carry = product >> 32;
  }
  if (carry != 0) n.push_back(static_cast<uint32_t>(carry));
}

// remainder >= divisor (same limb count)
bool at_least(const Limbs& remainder, const Limbs& divisor) {
  for (int i = static_cast<int>(divisor.size()) - 1; i >= 0; --i) {
    if (remainder[i] != divisor[i]) return remainder[i] > divisor[i];
  }
  return true;
}

void subtract(Limbs& remainder, const Limbs& divisor) {
  int64_t borrow = 0;
  for (size_t i = 0; i < divisor.size(); ++i) {
    const int64_t difference = static_cast<int64_t>(remainder[i]) - divisor[i] - borrow;
    remainder[i] = static_cast<uint32_t>(difference);
    borrow = difference < 0 ? 1 : 0;
  }
}

void shift_left_one(Limbs& n, bool low_bit) {
  uint32_t carry = low_bit ? 1 : 0;
  for (uint32_t& limb : n) {
    const uint32_t next = limb >> 31;
    limb = (limb << 1) | carry;
    carry = next;
  }
}

// The top bits of n x 2^shift as a number below 2^126 (the caller picks shift so it is).
shortest::Uint128 scaled(const Limbs& n, int shift) {
  shortest::Uint128 value = 0;
  for (int bit = 125; bit >= 0; --bit) value = (value << 1) | (bit_at(n, bit - shift) ? 1 : 0);
  return value;
}

// floor(2^exponent / divisor), known to be below 2^126, by binary long division.
shortest::Uint128 power_of_two_over(int exponent, const Limbs& divisor) {
  Limbs remainder(divisor.size() + 1, 0);
  Limbs wide = divisor;
  wide.push_back(0);
  shortest::Uint128 quotient = 0;
  for (int bit = exponent; bit >= 0; --bit) {
    shift_left_one(remainder, bit == exponent);
    quotient <<= 1;
    if (at_least(remainder, wide)) {
      subtract(remainder, wide);
      quotient |= 1;
    }
  }
  return quotient;
}

std::array<uint64_t, kDecimalPowerWords> compute_powers() {
  std::array<uint64_t, kDecimalPowerWords> words{};
  Limbs five_power = {1};  // 5^e
  std::vector<Limbs> powers_of_five;
  for (int e = 0; e <= -kDecimalPowerMin; ++e) {
    powers_of_five.push_back(five_power);
    multiply_by_5(five_power);
  }
  for (int k = kDecimalPowerMin; k <= kDecimalPowerMax; ++k) {
    const int e = -k;  // g ~ 10^e x 2^-r
    const int r = shortest::floor_log2_pow10(e) - 125;
    shortest::Uint128 g;
    if (e >= 0) {
      g = scaled(powers_of_five[e], e - r) + 1;  // 5^e x 2^(e - r), truncated
    } else {
      g = power_of_two_over(-r + e, powers_of_five[-e]) + 1;  // 2^(-r - m) / 5^m, m = -e
    }
    const size_t at = 2 * static_cast<size_t>(k - kDecimalPowerMin);
    words[at] = static_cast<uint64_t>(g >> 63);
    words[at + 1] = static_cast<uint64_t>(g) & shortest::kMask63;
  }
  return words;
}
}  // namespace

const uint64_t* shortest_decimal_powers() {
  static const std::array<uint64_t, kDecimalPowerWords> powers = compute_powers();
  return powers.data();
}

}  // namespace imflow::kernels
