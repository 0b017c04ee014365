// write_shortest gives std::to_chars's text byte for byte: random bit patterns (every exponent,
// subnormals), catalog-like values, decimal fractions, powers of ten and their neighbours, the
// extremes, whole numbers of every length (its own path below 2^53) and the non-finite values. Its 16-digit
// blocks, SIMD and portable, against snprintf.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "io/decimal_digits.hpp"
#include "io/shortest_double.hpp"

namespace {
std::string std_text(double value) {
  char text[64];
  return std::string(text, std::to_chars(text, text + sizeof text, value).ptr);
}

int bytes_past_room = 0;  // writes beyond kShortestDoubleChars, counted by shortest_text

std::string shortest_text(double value) {
  constexpr int room = imflow::detail::kShortestDoubleChars;
  char text[room + 8];
  std::memset(text, '#', sizeof text);
  const std::string out(text, imflow::detail::write_shortest(text, value));
  for (int i = room; i < room + 8; ++i) bytes_past_room += text[i] != '#';
  return out;
}

// Counts the values whose texts differ, printing the first few.
int differences(double value, int& printed) {
  const std::string expected = std_text(value), got = shortest_text(value);
  if (expected == got) return 0;
  if (printed++ < 5) UNSCOPED_INFO(expected << " written as " << got);
  return 1;
}
}  // namespace

TEST_CASE("write_shortest writes std::to_chars's text for every kind of double", "[csv]") {
  std::mt19937_64 rng(20261126);
  std::uniform_real_distribution<double> pixel(-3000.0, 3000.0);
  std::uniform_int_distribution<int> exponent(-330, 330);
  int printed = 0, differing = 0;
  for (int i = 0; i < 200000; ++i) {
    differing += differences(std::bit_cast<double>(rng()), printed);  // any exponent, NaNs and infinities
    const double value = pixel(rng);
    differing += differences(value, printed);
    differing += differences(value * 1e-3, printed);
    differing += differences(value * 1e-7, printed);
    differing += differences(std::ldexp(1.0, exponent(rng) * 3), printed);
    differing += differences(static_cast<double>(rng() % 100000) / 1000.0, printed);  // short decimals
    // Whole numbers of 1 to 16 digits, with trailing zeros, either sign; and around 2^53.
    const double whole = static_cast<double>(rng() % (uint64_t{1} << (i % 54))) * std::pow(10.0, i % 7);
    differing += differences(whole, printed) + differences(-whole, printed);
    differing += differences(std::ldexp(1.0, 53) + static_cast<double>(rng() % 64) * (i % 2 ? 2.0 : -1.0), printed);
  }
  for (int p = -325; p <= 308; ++p) {
    const double power = std::pow(10.0, p);
    for (double value : {power, std::nextafter(power, 0.0), std::nextafter(power, HUGE_VAL), 1.5 * power, 0.999 * power}) {
      differing += differences(value, printed) + differences(-value, printed);
    }
  }
  using limits = std::numeric_limits<double>;
  for (double value : {0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 0.2, 0.3, 1e-5, 1e-4, 1.25e-4, 123456.0, 1e16, 1e22, 1e23, 1.5e300,
                       12300000000000001048576.0, 9007199254740993.0, limits::max(), limits::min(), limits::denorm_min(),
                       -limits::denorm_min(), limits::infinity(), -limits::infinity(), limits::quiet_NaN(), 4.35,
                       405.0, -405.0, 100000.0, 1000000.0, 120000.0, 9007199254740991.0, 9007199254740992.0, 4503599627370497.0,
                       355.1199951171875, 65.35016943183446, 681.8708422763598, -1234567890123456.8}) {
    differing += differences(value, printed);
  }
  CHECK(differing == 0);
  CHECK(bytes_past_room == 0);
  // A few texts spelled out, independently of std::to_chars.
  CHECK(shortest_text(0.1) == "0.1");
  CHECK(shortest_text(-2.5e-7) == "-2.5e-07");
  CHECK(shortest_text(1023.4567891234567) == "1023.4567891234567");
  CHECK(shortest_text(0.0001) == "1e-04");  // shorter than 0.0001
  CHECK(shortest_text(0.00012) == "0.00012");
  CHECK(shortest_text(1.2e-5) == "1.2e-05");
  CHECK(shortest_text(5e-324) == "5e-324");
  CHECK(shortest_text(1e100) == "1e+100");
  CHECK(shortest_text(-0.0) == "-0");
  CHECK(shortest_text(405.0) == "405");
  CHECK(shortest_text(-120000.0) == "-120000");
  CHECK(shortest_text(1000000.0) == "1e+06");  // shorter than 1000000
  CHECK(shortest_text(12300000.0) == "12300000");  // a tie with 1.23e+07: %f
}

TEST_CASE("16-digit blocks are the zero-padded decimal digits, with and without SIMD", "[csv]") {
  std::mt19937_64 rng(20261127);
  std::vector<uint32_t> halves = {0, 1, 9, 10, 99, 100, 9999, 10000, 10001, 99999999, 12345678, 87654321, 50000000};
  for (int i = 0; i < 100000; ++i) halves.push_back(static_cast<uint32_t>(rng() % 100000000));
  for (uint32_t p = 1; p < 100000000; p *= 10) halves.insert(halves.end(), {p - 1, p, p + 1, 5 * p});
  int differing = 0;
  for (size_t i = 0; i < halves.size(); ++i) {
    const uint32_t high = halves[i], low = halves[(i * 7 + 3) % halves.size()];
    char expected[20];
    std::snprintf(expected, sizeof expected, "%08u%08u", high, low);
    char portable[16];
    imflow::detail::write_16_digits_portable(high, low, portable);
    differing += std::memcmp(portable, expected, 16) != 0;
#if defined(__SSE2__)
    char sse2[16];
    imflow::detail::write_16_digits_sse2(high, low, sse2);
    differing += std::memcmp(sse2, expected, 16) != 0;
#endif
  }
  CHECK(differing == 0);
  char text[16];
  imflow::detail::write_16_digits(12345678, 90123456, text);
  CHECK(std::string(text, 16) == "1234567890123456");
}

// Hidden (run with `imflow_tests "[bench][csv]"`): nanoseconds per value of write_shortest and of
// std::to_chars on catalog-like doubles (positions, fluxes, moments, their errors and angles),
// the fastest of 200 passes each, alternated.
TEST_CASE("shortest double text: time per catalog-like value", "[.][bench][csv]") {
  std::mt19937_64 rng(20261127);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> values;
  for (int row = 0; row < 3000; ++row) {
    const double x = 2048.0 * unit(rng), y = 2048.0 * unit(rng);
    const double peak = static_cast<float>(500.0 + 1e4 * unit(rng));  // a float32 pixel value
    for (double v : {x, y, x + 1.0, y + 1.0, 150.0 + unit(rng), -30.0 - unit(rng), 1e3 + 1e5 * unit(rng), peak,
                     1e3 * unit(rng), 50.0 * unit(rng), 2.0 * unit(rng), 2.0 * unit(rng), unit(rng) - 0.5,
                     1e-3 * unit(rng), 1e-3 * unit(rng), 1e-4 * (unit(rng) - 0.5), 0.05 * unit(rng), 0.03 * unit(rng),
                     unit(rng) - 0.5, 2.0 * unit(rng), unit(rng), unit(rng) - 0.5, 1.0 + unit(rng), 0.5 * unit(rng),
                     1.0 + unit(rng), 1.0 + unit(rng), unit(rng) - 0.5}) {
      values.push_back(v);
    }
  }
  std::vector<char> text(values.size() * imflow::detail::kShortestDoubleChars);
  const auto pass = [&](auto write) {
    const auto start = std::chrono::steady_clock::now();
    char* at = text.data();
    for (double v : values) at = write(at, v);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::pair<double, size_t>(seconds / static_cast<double>(values.size()) * 1e9, at - text.data());
  };
  double ours = 1e9, standard = 1e9;
  size_t ours_bytes = 0, standard_bytes = 0;
  for (int round = 0; round < 200; ++round) {
    const auto [a, bytes_a] = pass([](char* at, double v) { return imflow::detail::write_shortest(at, v); });
    const auto [b, bytes_b] = pass([](char* at, double v) { return std::to_chars(at, at + 32, v).ptr; });
    ours = std::min(ours, a), standard = std::min(standard, b);
    ours_bytes = bytes_a, standard_bytes = bytes_b;
  }
  CHECK(ours_bytes == standard_bytes);
  std::printf("%zu catalog-like doubles, %.1f characters each: write_shortest %.1f ns, std::to_chars %.1f ns "
              "per value\n",
              values.size(), static_cast<double>(ours_bytes) / static_cast<double>(values.size()), ours, standard);
}
