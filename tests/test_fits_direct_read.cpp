// The direct read of uncompressed FITS data against CFITSIO's own read, bit for bit: every BITPIX
// with and without BSCALE/BZERO (the unsigned conventions included) and BLANK, raw values over the
// whole range of the type (NaN payloads, infinities, denormals), whole planes and many regions of
// a cube in an extension; the cases left to CFITSIO; the errors of the direct read.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <random>

#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "io/fits_direct_read.hpp"
#include "io/fits_read_paths.hpp"
#include "test_helpers.hpp"

using namespace imflow;
using detail::FitsReadPath;

namespace {

struct Scaling {
  int bitpix;
  double scale, zero;
  std::optional<long long> blank;
};

std::string describe(const Scaling& s) {
  std::string text = "BITPIX " + std::to_string(s.bitpix) + " BSCALE " + std::to_string(s.scale) + " BZERO " +
                     std::to_string(s.zero);
  if (s.blank) text += " BLANK " + std::to_string(*s.blank);
  return text;
}

// Every BITPIX, unscaled, with its unsigned/signed BZERO convention, scaled, and with BLANK (in
// range, out of range, and CFITSIO's "undefined" marker 1234554321 for 64-bit).
std::vector<Scaling> all_scalings() {
  const long long int32_min = std::numeric_limits<int32_t>::min();
  const long long int64_min = std::numeric_limits<int64_t>::min();
  return {
      {8, 1, 0, {}},         {8, 1, -128, {}},         {8, 0.37, 12.5, {}},          {8, 1, 0, 255},
      {8, 1, -128, 0},       {8, 0.5, 3, 7},           {8, 1, 0, 300},               {16, 1, 0, {}},
      {16, 1, 32768, {}},    {16, 0.001, -3.7, {}},    {16, 1, 0, -32768},           {16, 1, 32768, 12},
      {16, 2.5, 100, 32767}, {16, 1, 0, 70000},        {32, 1, 0, {}},               {32, 1, 2147483648.0, {}},
      {32, 1e-6, 5.25, {}},  {32, 1, 0, int32_min},    {32, 1, 2147483648.0, -1},    {32, 3.3, -7, 42},
      {32, 1, 0, (1LL << 33) + 5},  // compared as (int32) 5, as CFITSIO does
      {64, 1, 0, {}},        {64, 1, 9223372036854775808.0, {}},                     {64, 1e-9, 0.5, {}},
      {64, 1, 0, int64_min}, {64, 1, 9223372036854775808.0, 17},                     {64, 1, 0, 1234554321},
      {64, 2, 1, -3},        {-32, 1, 0, {}},          {-32, 2.5, -1, {}},           {-32, 1, 1e30, {}},
      {-32, 1, 0, 5},        {-64, 1, 0, {}},          {-64, 1e-3, 7, {}},           {-64, 3, -1e-5, {}},
  };
}

// Raw stored values of one plane for a BITPIX: random bits over the whole type, the extremes,
// and the BLANK value (as the type holds it) every 7th pixel.
template <typename Raw>
std::vector<Raw> raw_values(size_t count, std::mt19937_64& rng, const std::optional<long long>& blank) {
  std::vector<Raw> values(count);
  for (auto& v : values) {
    const uint64_t bits = rng();
    std::memcpy(&v, &bits, sizeof v);
  }
  const Raw extremes[] = {std::numeric_limits<Raw>::lowest(), std::numeric_limits<Raw>::max(), Raw(0), Raw(1)};
  for (size_t i = 0; i < 4 && i < count; ++i) values[i] = extremes[i];
  if (blank) {
    for (size_t i = 5; i < count; i += 7) values[i] = static_cast<Raw>(*blank);
  }
  return values;
}

// Float data: random bit patterns (quiet and signalling NaNs with payloads, denormals), ordinary
// values, and the special values.
template <typename Raw>
std::vector<Raw> float_values(size_t count, std::mt19937_64& rng) {
  std::vector<Raw> values = raw_values<Raw>(count, rng, std::nullopt);
  std::normal_distribution<double> normal(100.0, 30.0);
  for (size_t i = 0; i < count; i += 2) values[i] = static_cast<Raw>(normal(rng));
  using Limits = std::numeric_limits<Raw>;
  const Raw specials[] = {Limits::quiet_NaN(), -Limits::quiet_NaN(), Limits::signaling_NaN(), Limits::infinity(),
                          -Limits::infinity(), Limits::denorm_min(), -Limits::denorm_min(), Raw(-0.0),
                          Limits::min(), Limits::max(), Limits::lowest(), Raw(1e-30), Raw(3.4e38)};
  for (size_t i = 0; i < std::size(specials) && 10 + 3 * i < count; ++i) values[10 + 3 * i] = specials[i];
  if constexpr (sizeof(Raw) == 8) {
    // Doubles beyond float range and below its denormals.
    for (size_t i = 1; i < count; i += 11) values[i] = (i % 2 ? 1 : -1) * std::pow(10.0, 30 + static_cast<double>(i % 300));
    for (size_t i = 3; i < count; i += 13) values[i] = std::pow(10.0, -40 - static_cast<double>(i % 280));
  }
  return values;
}

// Append an image HDU holding `planes` of stored values exactly as given, then its BSCALE/BZERO/
// BLANK (written after the data, so that CFITSIO stores the raw values unscaled).
void write_raw_image(const std::filesystem::path& path, bool create, const Scaling& s, std::vector<long> naxes,
                     std::mt19937_64& rng) {
  fitsfile* file = nullptr;
  int status = 0;
  if (create) {
    fits_create_file(&file, ("!" + path.string()).c_str(), &status);
  } else {
    fits_open_file(&file, path.c_str(), READWRITE, &status);
  }
  fits_create_img(file, s.bitpix, static_cast<int>(naxes.size()), naxes.data(), &status);
  size_t count = 1;
  for (long n : naxes) count *= static_cast<size_t>(n);
  const auto write = [&](int type, auto values) {
    fits_write_img(file, type, 1, static_cast<LONGLONG>(count), values.data(), &status);
  };
  switch (s.bitpix) {
    case 8: write(TBYTE, raw_values<uint8_t>(count, rng, s.blank)); break;
    case 16: write(TSHORT, raw_values<int16_t>(count, rng, s.blank)); break;
    case 32: write(TINT, raw_values<int32_t>(count, rng, s.blank)); break;
    case 64: write(TLONGLONG, raw_values<long long>(count, rng, s.blank)); break;
    case -32: write(TFLOAT, float_values<float>(count, rng)); break;
    case -64: write(TDOUBLE, float_values<double>(count, rng)); break;
  }
  if (s.scale != 1.0 || s.zero != 0.0) {
    double scale = s.scale, zero = s.zero;
    fits_write_key(file, TDOUBLE, "BSCALE", &scale, nullptr, &status);
    fits_write_key(file, TDOUBLE, "BZERO", &zero, nullptr, &status);
  }
  if (s.blank) {
    long long blank = *s.blank;
    fits_write_key(file, TLONGLONG, "BLANK", &blank, nullptr, &status);
  }
  fits_close_file(file, &status);
  if (status != 0) throw std::runtime_error("test write_raw_image failed: " + std::to_string(status));
}

// Both reads give the same bits (NaN payloads included); on a difference, say where.
void check_identical(const ImageBuffer& direct, const ImageBuffer& cfitsio) {
  REQUIRE(direct.width() == cfitsio.width());
  REQUIRE(direct.height() == cfitsio.height());
  const size_t count = static_cast<size_t>(direct.width() * direct.height());
  if (std::memcmp(direct.data(), cfitsio.data(), count * sizeof(float)) == 0) return;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t a = std::bit_cast<uint32_t>(direct.data()[i]), b = std::bit_cast<uint32_t>(cfitsio.data()[i]);
    if (a != b) FAIL("pixel " << i << ": direct " << direct.data()[i] << " (0x" << std::hex << a << "), CFITSIO "
                                << cfitsio.data()[i] << " (0x" << b << ")");
  }
}

void compare_region(const std::filesystem::path& path, int hdu, int64_t plane, const TileRect& region) {
  INFO("HDU " << hdu << " plane " << plane << " region " << region.width << "x" << region.height << "+" << region.x
              << "+" << region.y);
  ImageBuffer direct, cfitsio;
  const int64_t direct_bytes = detail::read_fits_region(path, hdu, plane, region, direct, {}, FitsReadPath::fastest);
  const int64_t cfitsio_bytes = detail::read_fits_region(path, hdu, plane, region, cfitsio, {}, FitsReadPath::cfitsio);
  CHECK(direct_bytes == cfitsio_bytes);
  check_identical(direct, cfitsio);
}

// Edges, corners, single pixels, rows, columns, whole rows (one contiguous read), and random
// rectangles of a width x height plane.
std::vector<TileRect> regions_of(int64_t width, int64_t height, std::mt19937_64& rng) {
  std::vector<TileRect> regions = {
      {0, 0, width, height},      {0, 0, 1, 1},          {width - 1, height - 1, 1, 1}, {width - 1, 0, 1, 1},
      {0, height - 1, 1, 1},      {0, 0, width, 1},      {0, height - 1, width, 1},     {0, 10, width, 17},
      {width - 1, 0, 1, height},  {0, 0, 1, height},     {1, 1, width - 2, height - 2}, {3, 5, 7, 1},
      {width - 33, height - 9, 33, 9},
  };
  for (int i = 0; i < 24; ++i) {
    const int64_t x = static_cast<int64_t>(rng() % width), y = static_cast<int64_t>(rng() % height);
    const int64_t w = 1 + static_cast<int64_t>(rng() % (width - x)), h = 1 + static_cast<int64_t>(rng() % (height - y));
    regions.push_back({x, y, w, h});
  }
  return regions;
}

}  // namespace

TEST_CASE("the direct read of uncompressed FITS equals CFITSIO's bit for bit", "[fits][direct]") {
  test::TempDir dir("fits_direct");
  std::mt19937_64 rng(20261123);
  // 301 x 250 pixels: odd sizes, more than one 256 KiB read chunk and many 256-pixel blocks.
  const int64_t width = 301, height = 250;
  for (const Scaling& s : all_scalings()) {
    INFO(describe(s));
    const auto path = dir / "image.fits";
    write_raw_image(path, true, s, {13, 7}, rng);              // HDU 0: a small 2-D image
    write_raw_image(path, false, s, {width, height, 2}, rng);  // HDU 1: a cube of 2 planes
    REQUIRE(detail::fits_direct_read_applies(path, 0));
    REQUIRE(detail::fits_direct_read_applies(path, 1));

    for (int hdu : {0, 1}) {
      const int64_t planes = hdu == 0 ? 1 : 2;
      for (int64_t plane = 0; plane < planes; ++plane) {
        INFO("whole plane " << plane << " of HDU " << hdu);
        ImageBuffer direct, cfitsio;
        const int64_t direct_bytes = detail::read_fits_plane(path, hdu, plane, direct, {}, FitsReadPath::fastest);
        const int64_t cfitsio_bytes = detail::read_fits_plane(path, hdu, plane, cfitsio, {}, FitsReadPath::cfitsio);
        CHECK(direct_bytes == cfitsio_bytes);
        check_identical(direct, cfitsio);
        // The public read is the direct one.
        ImageBuffer through_public;
        read_fits_plane(path, hdu, plane, through_public);
        check_identical(through_public, direct);
      }
    }
    compare_region(path, 0, 0, {0, 0, 13, 7});
    compare_region(path, 0, 0, {12, 6, 1, 1});
    for (int64_t plane : {0, 1}) {
      for (const TileRect& region : regions_of(width, height, rng)) compare_region(path, 1, plane, region);
    }
  }
}

TEST_CASE("the direct read keeps float bit patterns and maps BLANK to NaN", "[fits][direct]") {
  test::TempDir dir("fits_direct_values");
  const auto path = dir / "f.fits";
  // Unscaled BITPIX -32 is a plain copy: signalling NaN and payloads survive.
  const float signalling = std::numeric_limits<float>::signaling_NaN();
  const float payload = std::bit_cast<float>(uint32_t{0xFFC12345u});
  std::vector<float> values = {1.5f, signalling, payload, -0.0f, std::numeric_limits<float>::denorm_min(),
                               -std::numeric_limits<float>::infinity()};
  {
    fitsfile* file = nullptr;
    int status = 0;
    long naxes[2] = {3, 2};
    fits_create_file(&file, ("!" + path.string()).c_str(), &status);
    fits_create_img(file, FLOAT_IMG, 2, naxes, &status);
    fits_write_img(file, TFLOAT, 1, 6, values.data(), &status);
    fits_close_file(file, &status);
    REQUIRE(status == 0);
  }
  REQUIRE(detail::fits_direct_read_applies(path, 0));
  ImageBuffer image;
  read_fits_plane(path, 0, 0, image);
  CHECK(std::memcmp(image.data(), values.data(), sizeof(float) * values.size()) == 0);

  // 16-bit unsigned with BLANK: BLANK becomes NaN, the rest value + 32768.
  const auto unsigned_path = dir / "u16.fits";
  std::mt19937_64 rng(7);
  write_raw_image(unsigned_path, true, {16, 1, 32768, -32768}, {40, 3}, rng);
  ImageBuffer u16;
  read_fits_plane(unsigned_path, 0, 0, u16);
  CHECK(std::isnan(u16.data()[0]));          // raw -32768 is BLANK
  CHECK(u16.data()[1] == 65535.0f);          // raw 32767
  CHECK(u16.data()[3] == 32769.0f);          // raw 1
  CHECK(std::isnan(u16.data()[5]));          // BLANK every 7th pixel from 5
}

TEST_CASE("a deferred swap leaves only unscaled float32 words in the file's byte order", "[fits][direct]") {
  test::TempDir dir("fits_deferred_swap");
  std::mt19937_64 rng(20261126);
  for (const Scaling& s : all_scalings()) {
    INFO(describe(s));
    const auto path = dir / "image.fits";
    write_raw_image(path, true, s, {301, 250, 2}, rng);
    for (int64_t plane : {0, 1}) {
      ImageBuffer converted, raw;
      read_fits_plane(path, 0, plane, converted);
      bool deferred = !(s.bitpix == -32 && s.scale == 1 && s.zero == 0);  // the opposite of what it must become
      ReadLimits limits;
      limits.float32_swap_deferred = &deferred;
      read_fits_plane(path, 0, plane, raw, limits);
      REQUIRE(raw.size() == converted.size());
      CHECK(deferred == (s.bitpix == -32 && s.scale == 1 && s.zero == 0));
      if (!deferred) {
        check_identical(raw, converted);
        continue;
      }
      int64_t differ = 0;
      for (int64_t i = 0; i < raw.size(); ++i)
        differ += __builtin_bswap32(std::bit_cast<uint32_t>(raw.data()[i])) != std::bit_cast<uint32_t>(converted.data()[i]);
      CHECK(differ == 0);
    }
  }
}

TEST_CASE("compressed FITS files are read by CFITSIO, not directly", "[fits][direct]") {
  test::TempDir dir("fits_direct_fallback");
  const auto plain = dir / "plain.fits";
  test::write_fits(plain, 16, {50, 40}, test::star_field(50, 40, 3), 1.0, 32768.0);
  ImageBuffer expected;
  detail::read_fits_plane(plain, 0, 0, expected, {}, FitsReadPath::cfitsio);

  // gzip'd, with and without the .gz name (CFITSIO decompresses both into memory).
  for (const char* name : {"plain.fits.gz", "gzipped_content.fits"}) {
    INFO(name);
    const auto gz = dir / name;
    REQUIRE(std::system(("gzip -c '" + plain.string() + "' > '" + gz.string() + "'").c_str()) == 0);
    CHECK_FALSE(detail::fits_direct_read_applies(gz, 0));
    ImageBuffer image;
    read_fits_plane(gz, 0, 0, image);
    check_identical(image, expected);
    read_fits_region(gz, 0, 0, {3, 4, 20, 10}, image);
    ImageBuffer region;
    detail::read_fits_region(plain, 0, 0, {3, 4, 20, 10}, region, {}, FitsReadPath::cfitsio);
    check_identical(image, region);
  }

  // Below a directory whose name holds ".Z": CFITSIO searches the whole path for ".Z" to choose
  // Unix compress, which failed every gzip file there (a CI clone in /tmp/ci.Z2xa did).
  // The same for gzip content under a plain name (CFITSIO finds it by its first bytes) and for an
  // uncompressed file there, read through the same /proc/self/fd route.
  std::filesystem::create_directories(dir / "run.Zeta");
  for (const char* name : {"plain.fits.gz", "gzipped_content.fits", "uncompressed.fits"}) {
    INFO(name);
    const auto below = dir / "run.Zeta" / name;
    const std::string command = std::string(name) == "uncompressed.fits" ? "cat '" : "gzip -c '";
    REQUIRE(std::system((command + plain.string() + "' > '" + below.string() + "'").c_str()) == 0);
    REQUIRE(scan_fits(below).size() == 1);
    ImageBuffer from_below;
    read_fits_plane(below, 0, 0, from_below);
    check_identical(from_below, expected);
  }

  // The same searches misled by the file's own name ("run.Zband.fits.gz", a name holding ".bz2")
  // and by a directory holding ".bz2": read through /proc/self/fd too (the file's own descriptor,
  // or its directory's).
  std::filesystem::create_directories(dir / "x.bz2data");
  for (const std::string name : {"run.Zband.fits.gz", "gzipped.Zband.fits", "uncompressed.Zband.fits", "a.bz2x.fits.gz",
                                 "x.bz2data/b.fits.gz", "x.bz2data/c.Zband.fits.gz"}) {
    INFO(name);
    const auto path = dir / name;
    const std::string command = name.rfind("uncompressed", 0) == 0 ? "cat '" : "gzip -c '";
    REQUIRE(std::system((command + plain.string() + "' > '" + path.string() + "'").c_str()) == 0);
    REQUIRE(scan_fits(path).size() == 1);
    ImageBuffer image;
    read_fits_plane(path, 0, 0, image);
    check_identical(image, expected);
    read_fits_region(path, 0, 0, {3, 4, 20, 10}, image);
    CHECK(image.width() == 20);
  }

  // Tile-compressed.
  const auto packed = dir / "packed.fits.fz";
  test::write_tile_compressed(plain, packed);
  CHECK_FALSE(detail::fits_direct_read_applies(packed, 1));
  ImageBuffer image;
  read_fits_plane(packed, 1, 0, image);
  check_identical(image, expected);
}

TEST_CASE("direct read errors name the file and the reason", "[fits][direct]") {
  test::TempDir dir("fits_direct_errors");
  const auto path = dir / "small.fits";
  test::write_fits(path, -32, {4, 3}, std::vector<double>(12, 1.0));
  detail::DirectImageLayout layout;
  layout.header_offset = 0;
  layout.data_offset = 2880;
  layout.width = 4;
  layout.height = 3;
  layout.bytes_per_pixel = 4;
  std::vector<float> out(12 * 1000);
  // Data beyond the end of the file (a file cut short after it was checked).
  layout.height = 3000;
  CHECK_THROWS_WITH(detail::read_direct(path, layout, 0, {0, 2000, 4, 3}, out.data(), "HDU 0 plane 0"),
                    Catch::Contains(path.string()) && Catch::Contains("HDU 0 plane 0") &&
                        Catch::Contains("unexpected end of file"));
  layout.height = 3;
  // A header offset where there is no header.
  layout.header_offset = 2880;
  CHECK_THROWS_WITH(detail::read_direct(path, layout, 0, {0, 0, 4, 3}, out.data(), "HDU 0 plane 0"),
                    Catch::Contains(path.string()) && Catch::Contains("no FITS header"));
  layout.header_offset = 0;
  // A file that is gone.
  CHECK_THROWS_AS(detail::read_direct(dir / "missing.fits", layout, 0, {0, 0, 4, 3}, out.data(), "HDU 0 plane 0"),
                  InputError);
  CHECK_THROWS_WITH(detail::read_direct(dir / "missing.fits", layout, 0, {0, 0, 4, 3}, out.data(), "HDU 0 plane 0"),
                    Catch::Contains("missing.fits") && Catch::Contains("cannot open for reading"));
}
