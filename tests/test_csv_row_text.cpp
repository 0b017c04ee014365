// The CSV text the GPU writes, checked on the host where it compiles the same: Schubfach's
// shortest decimals (kernels/shortest_decimal.hpp) give std::to_chars's text byte for byte, its
// table and exponent helpers are exact, and a catalog written from the device's rows (ra, dec and
// errtheta put in by the host) is the file the host writes itself.
#include <catch2/catch.hpp>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>

#include "csv_text_reference.hpp"
#include "imflow/io/catalog.hpp"
#include "imflow/kernels/shortest_decimal.hpp"

namespace {
namespace k = imflow::kernels;

std::string std_text(double value) {
  char text[64];
  return std::string(text, std::to_chars(text, text + sizeof text, value).ptr);
}

std::string schubfach_text(double value) {
  char text[k::kShortestTextChars];
  return std::string(text, k::write_shortest_text(text, value, k::shortest_decimal_powers()));
}

// Schubfach's text against std::to_chars's, and the CSV's (".0" after a whole number's digits) and
// its length against that text.
int differences(double value, int& printed) {
  if (!std::isfinite(value)) return 0;
  const std::string expected = std_text(value), got = schubfach_text(value);
  const std::string csv = expected.find_first_of(".e") == std::string::npos ? expected + ".0" : expected;
  const uint64_t* powers = k::shortest_decimal_powers();
  char text[k::kCsvNumberChars];
  const std::string csv_got(text, k::write_csv_number(text, value, false, powers));
  const auto length = static_cast<size_t>(k::csv_number_length(value, false, powers));
  if (expected == got && csv == csv_got && length == csv.size()) return 0;
  if (printed++ < 5) UNSCOPED_INFO(expected << " written as " << got << ", in the CSV " << csv_got << ", length " << length);
  return 1;
}

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST_CASE("Schubfach's shortest decimals are std::to_chars's text", "[csv]") {
  std::mt19937_64 rng(20261127);
  std::uniform_real_distribution<double> pixel(-3000.0, 3000.0);
  int printed = 0, differing = 0;
  for (int i = 0; i < 200000; ++i) {
    differing += differences(std::bit_cast<double>(rng()), printed);  // every exponent
    differing += differences(std::bit_cast<double>(rng() >> 12), printed);  // subnormals
    differing += differences(std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(rng() % 140) - 60), printed);
    differing += differences(pixel(rng), printed);
    differing += differences(static_cast<double>(rng() % 100000000) / 1000.0, printed);  // short decimals
  }
  for (uint64_t t = 1; t < 20000; ++t) differing += differences(std::bit_cast<double>(t), printed);
  for (int p = -325; p <= 308; ++p) {
    const double power = std::pow(10.0, p);
    for (double value : {power, std::nextafter(power, 0.0), std::nextafter(power, HUGE_VAL), 1.5 * power}) {
      differing += differences(value, printed) + differences(-value, printed);
    }
  }
  for (int e = -1074; e < 1024; ++e) {  // powers of two, whose interval below is half as wide
    const double power = std::ldexp(1.0, e);
    differing += differences(power, printed) + differences(std::nextafter(power, 0.0), printed) +
                 differences(std::nextafter(power, HUGE_VAL), printed);
  }
  using limits = std::numeric_limits<double>;
  for (double value : {1e22, 1e23, 9007199254740993.0, 18446744073709551616.0, 9.999999999999999e21,
                       1234567890123456789012.0, 123456.0, limits::max(), limits::min(), limits::denorm_min()}) {
    differing += differences(value, printed) + differences(-value, printed);
  }
  CHECK(differing == 0);
  const uint64_t* powers = k::shortest_decimal_powers();
  for (double value : {std::numeric_limits<double>::quiet_NaN(), HUGE_VAL, -HUGE_VAL}) {
    char text[k::kCsvNumberChars];
    const std::string written(text, k::write_csv_number(text, value, false, powers));
    CHECK(written == (value != value ? "NaN" : value > 0 ? "Infinity" : "-Infinity"));
    CHECK(k::csv_number_length(value, false, powers) == static_cast<int>(written.size()));
  }
  // Spelled out, independently of std::to_chars.
  CHECK(schubfach_text(0.0) == "0");
  CHECK(schubfach_text(-0.0) == "-0");
  CHECK(schubfach_text(0.1) == "0.1");
  CHECK(schubfach_text(1000.0) == "1000");
  CHECK(schubfach_text(1e22) == "1e+22");
  CHECK(schubfach_text(5e-324) == "5e-324");
  CHECK(schubfach_text(1.7976931348623157e308) == "1.7976931348623157e+308");
  CHECK(schubfach_text(-2.5e-5) == "-2.5e-05");
  CHECK(schubfach_text(0.000123) == "0.000123");
}

TEST_CASE("Schubfach's table and exponent helpers are exact", "[csv]") {
  const uint64_t* powers = k::shortest_decimal_powers();
  for (int i = 0; i < k::kDecimalPowerWords; i += 2) {
    INFO("k = " << k::kDecimalPowerMin + i / 2);
    CHECK(powers[i] >> 62 == 1);  // 2^125 <= g < 2^126: the high word's top bit is bit 62
    CHECK(powers[i + 1] >> 63 == 0);
  }
  // g(0) = 2^125 + 1 (10^0 normalised), g(-1) = 10 x 2^122 + 1.
  CHECK(powers[2 * -k::kDecimalPowerMin] == (1ull << 62));
  CHECK(powers[2 * -k::kDecimalPowerMin + 1] == 1);
  CHECK(powers[2 * (-1 - k::kDecimalPowerMin)] == (10ull << 59));
  // floor(q log10 2) and floor(e log2 10), checked with integer powers in long double where exact.
  for (int q = -1100; q <= 1100; ++q) {
    const long double value = q * std::log10(2.0L);
    CHECK(k::shortest::floor_log10_pow2(q) == static_cast<int>(std::floor(value)));
  }
  for (int e = -330; e <= 330; ++e) {
    CHECK(k::shortest::floor_log2_pow10(e) == static_cast<int>(std::floor(e * std::log2(10.0L))));
  }
}

TEST_CASE("A catalog written from the device's CSV rows is the host's file", "[csv]") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> position(0.0, 4096.0), moment(-3.0, 30.0);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const auto source = [&](int id) {
    imflow::Source s;
    s.id = id;
    s.x = position(rng), s.y = position(rng);
    s.flux = moment(rng) * 1e4, s.peak = std::round(moment(rng) * 100), s.npix = static_cast<int64_t>(rng() % 5000);
    s.peak_x = static_cast<int64_t>(s.x), s.peak_y = static_cast<int64_t>(s.y);
    s.xmin = s.peak_x - 3, s.xmax = s.peak_x + 4, s.ymin = s.peak_y - 2, s.ymax = s.peak_y + 2;
    s.flux_iso = s.flux * 0.9, s.flux_iso_err = std::sqrt(std::abs(s.flux));
    s.x2 = std::abs(moment(rng)), s.y2 = std::abs(moment(rng)), s.xy = moment(rng) * 0.1;
    s.errx2 = s.x2 * 1e-5, s.erry2 = s.y2 * 1e-5, s.errxy = s.xy * 1e-6;
    s.a = std::sqrt(s.x2 + 1.0), s.b = std::sqrt(s.y2 + 0.5), s.theta = moment(rng) * 0.05;
    s.cxx = 1.0 / s.a, s.cyy = 1.0 / s.b, s.cxy = -s.theta;
    s.flags = static_cast<int32_t>(rng() % 16);
    s.ra = 150.0 + s.x * 1e-4, s.dec = 2.0 - s.y * 1e-4;
    return s;
  };
  imflow::Catalog catalog;
  for (int i = 1; i <= 9000; ++i) catalog.push_back(source(i));  // more than one block of rows
  catalog[1].ra = catalog[1].dec = nan;
  catalog[2].flux = inf, catalog[2].peak = -inf, catalog[2].x2 = nan;
  catalog[3].errx2 = catalog[3].erry2 = catalog[3].errxy = 0.0;  // errtheta pi/4
  catalog[4].b = 0.0;  // elongation +Infinity
  catalog[5].x = -0.0, catalog[5].flux = 1e22, catalog[5].flux_iso = 5e-324;
  catalog[6].npix = (int64_t{1} << 53) + 1;  // through a double, as the host's columns
  catalog[7].errxy = -1e-5;  // an error ellipse at a negative angle

  const auto dir = std::filesystem::temp_directory_path() / ("imflow_csv_text_" + std::to_string(rng()));
  std::filesystem::create_directories(dir);
  for (size_t rows : {size_t{0}, size_t{1}, size_t{3000}, catalog.size()}) {
    INFO(rows << " rows");
    const imflow::Catalog part(catalog.begin(), catalog.begin() + static_cast<std::ptrdiff_t>(rows));
    const imflow::CatalogCsvText device = test::csv_text_as_device_writes(part);
    imflow::write_catalog_csv(dir / "host.csv", part);
    imflow::write_catalog_csv(dir / "device.csv", part, nullptr, &device);
    const std::string host = file_text(dir / "host.csv");
    CHECK(host == imflow::catalog_csv(part));
    CHECK(file_text(dir / "device.csv") == host);
    if (rows > 0) {  // the device's row leaves the three host cells empty
      const std::string first(device.text().substr(0, device.end(0)));
      CHECK(first.substr(device.ra_at(0), 2) == ",,");
      CHECK(first[device.errtheta_at(0)] == ',');
      CHECK(first[device.errtheta_at(0) - 1] == ',');
    }
  }
  // A text of another catalog's length is not used.
  const imflow::Catalog two(catalog.begin(), catalog.begin() + 2);
  const imflow::CatalogCsvText three = test::csv_text_as_device_writes(
      imflow::Catalog(catalog.begin() + 10, catalog.begin() + 13));
  imflow::write_catalog_csv(dir / "mismatch.csv", two, nullptr, &three);
  CHECK(file_text(dir / "mismatch.csv") == imflow::catalog_csv(two));
  std::filesystem::remove_all(dir);
}
