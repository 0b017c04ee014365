// FITS files as transfers and tools damage them, and compressed ones as surveys ship them: NaNs of
// a quantized tile-compressed float image; an extension whose header or data is damaged fails
// alone; a corrupt tile says why; GZIP tiles of 64-bit integers are refused; a gzip or bzip2 of
// several members or streams, cut short or corrupt says what it is.
#include <bzlib.h>
#include <catch2/catch.hpp>
#include <zlib.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "test_helpers.hpp"

using namespace imflow;
namespace fs = std::filesystem;

namespace {
constexpr int kSide = 64;

std::string file_bytes(const fs::path& path) { return test::read_text(path); }

void write_bytes(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// An empty primary and three 64x64 float32 extensions, each a star field.
void write_three_extensions(const fs::path& path) {
  test::write_empty_primary(path);
  for (unsigned chip = 0; chip < 3; ++chip) {
    test::write_fits(path, -32, {kSide, kSide}, test::star_field(kSide, kSide, chip), 1.0, 0.0, nullptr, false);
  }
}

// The offset of the n-th (0-based) extension header of a plain file.
size_t extension_offset(const std::string& bytes, int n) {
  for (size_t at = 2880; at < bytes.size(); at += 2880) {
    if (bytes.compare(at, 8, "XTENSION") == 0 && n-- == 0) return at;
  }
  FAIL("no extension " << n);
  return 0;
}

std::string read_error(const fs::path& path, int hdu) {
  ImageBuffer image;
  try {
    read_fits_plane(path, hdu, 0, image);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}
}  // namespace

TEST_CASE("a quantized tile-compressed float image keeps its NaN pixels", "[fits][damaged]") {
  test::TempDir dir("fits_compressed_nan");
  std::vector<double> values = test::star_field(kSide, kSide, 5);
  for (int y = 10; y < 14; ++y)
    for (int x = 20; x < 26; ++x) values[static_cast<size_t>(y) * kSide + x] = std::numeric_limits<double>::quiet_NaN();
  test::write_fits(dir / "plain.fits", -32, {kSide, kSide}, values);
  test::write_tile_compressed(dir / "plain.fits", dir / "packed.fits.fz");  // RICE_1, quantized
  ImageBuffer image;
  read_fits_plane(dir / "packed.fits.fz", 1, 0, image);
  int64_t nan_pixels = 0, nan_where_written = 0;
  for (int64_t i = 0; i < image.size(); ++i) {
    nan_pixels += std::isnan(image.data()[i]) ? 1 : 0;
    nan_where_written += std::isnan(image.data()[i]) && std::isnan(values[static_cast<size_t>(i)]) ? 1 : 0;
  }
  CHECK(nan_pixels == 24);
  CHECK(nan_where_written == 24);
  // The tiles' other pixels are the quantized values (within the quantization step of the noise).
  CHECK(image.data()[5 * kSide + 5] == Approx(values[5 * kSide + 5]).margin(1.0));
}

TEST_CASE("an extension with a damaged header fails alone, named by its HDU", "[fits][damaged]") {
  test::TempDir dir("fits_damaged_header");
  write_three_extensions(dir / "plain.fits");
  std::string bytes = file_bytes(dir / "plain.fits");
  const size_t third = extension_offset(bytes, 2);
  bytes.replace(third + 3 * 80, 80, std::string("NAXIS1  =                  abc").append(50, ' '));
  write_bytes(dir / "mef.fits", bytes);
  const std::vector<FitsImageInfo> images = scan_fits(dir / "mef.fits");
  REQUIRE(images.size() == 3);
  CHECK(images[0].hdu == 1);
  CHECK(images[0].error.empty());
  CHECK(images[1].hdu == 2);
  CHECK(images[1].error.empty());
  CHECK(images[2].hdu == 3);
  CHECK_THAT(images[2].error, Catch::Contains("mef.fits: HDU 3: unreadable extension header") &&
                                  Catch::Contains("illegal NAXISn keyword value"));
  // Bytes after the last HDU that are no extension are ignored: the file reads as before.
  write_bytes(dir / "junk.fits", file_bytes(dir / "plain.fits") + std::string(100, 'x'));
  const std::vector<FitsImageInfo> with_junk = scan_fits(dir / "junk.fits");
  REQUIRE(with_junk.size() == 3);
  for (const FitsImageInfo& image : with_junk) CHECK(image.error.empty());
}

TEST_CASE("a truncated last extension fails alone; the run reports it under its HDU", "[fits][damaged][engine]") {
  test::TempDir dir("fits_truncated_extension");
  fs::create_directories(dir / "in");
  write_three_extensions(dir / "plain.fits");
  const std::string bytes = file_bytes(dir / "plain.fits");
  write_bytes(dir / "in" / "cut.fits", bytes.substr(0, extension_offset(bytes, 2) + 2880 + 5760));
  const std::vector<FitsImageInfo> images = scan_fits(dir / "in" / "cut.fits");
  REQUIRE(images.size() == 3);
  CHECK(images[2].width() == kSide);  // its header was read
  CHECK_THAT(images[2].error, Catch::Contains("cut.fits: HDU 3: header claims 16384 bytes of data but the file holds only 5760"));
  Pipeline pipeline = test::pipeline_from("output: {formats: [csv]}\ndevice: cpu\nsteps: [background, segment, label, measure]\n");
  pipeline.input.dir = dir / "in";
  pipeline.output.dir = dir / "out";
  const RunSummary summary = run_pipeline(pipeline, RunOptions{});
  CHECK(summary.succeeded() == 2);
  CHECK(summary.failed() == 1);
  const nlohmann::json json = nlohmann::json::parse(test::read_text(dir / "out" / "summary.json"));
  for (const auto& item : json["items"]) {
    INFO(item.dump());
    CHECK((item["status"] == "failed") == (item["hdu"] == 3));
  }
  CHECK(fs::exists(dir / "out" / "cut.hdu1.cat.csv"));
  CHECK(fs::exists(dir / "out" / "cut.hdu2.cat.csv"));
  CHECK(!fs::exists(dir / "out" / "cut.hdu3.cat.csv"));
}

TEST_CASE("a corrupt compressed tile fails with CFITSIO's account of it", "[fits][damaged]") {
  test::TempDir dir("fits_corrupt_tile");
  std::vector<double> values(256 * 256);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 1000.0 + static_cast<double>((i * 7919) % 61);
  test::write_fits(dir / "plain.fits", 16, {256, 256}, values);
  test::write_tile_compressed(dir / "plain.fits", dir / "packed.fits.fz");
  std::string bytes = file_bytes(dir / "packed.fits.fz");
  bytes.replace(bytes.size() / 2, 64, std::string(64, '\xff'));
  write_bytes(dir / "corrupt.fits.fz", bytes);
  CHECK_THAT(read_error(dir / "corrupt.fits.fz", 1),
             Catch::Contains("corrupt.fits.fz: HDU 1 plane 0: cannot read pixels") && Catch::Contains("decompression error"));
}

TEST_CASE("a primary header without its END card is named as such", "[fits][damaged]") {
  // CFITSIO reads the pixels as more cards and says "illegal character in keyword".
  test::TempDir dir("fits_no_end");
  test::write_fits(dir / "plain.fits", -32, {kSide, kSide}, test::star_field(kSide, kSide, 2));
  std::string bytes = file_bytes(dir / "plain.fits");
  const size_t end = bytes.find("END" + std::string(77, ' '));
  REQUIRE(end != std::string::npos);
  bytes.replace(end, 80, std::string(80, ' '));  // blank: the header runs on into the pixels
  write_bytes(dir / "no_end.fits", bytes);
  CHECK_THAT(read_error(dir / "no_end.fits", 0),
             Catch::Contains("no_end.fits: not a readable FITS file: its primary header has bytes that are not header "
                             "text at byte 2880, before any END card"));
  write_bytes(dir / "cut.fits", bytes.substr(0, 2880));  // and a header cut before its END
  CHECK_THAT(read_error(dir / "cut.fits", 0), Catch::Contains("its primary header has no END card (the file ends at byte 2880)"));
}

TEST_CASE("64-bit integer tiles compressed with GZIP are refused, not read as arbitrary values", "[fits][damaged]") {
  // CFITSIO's pixel reads of such tiles (astropy writes them) return no error and arbitrary values.
  test::TempDir dir("fits_gzip_int64");
  const std::vector<double> values = test::star_field(kSide, kSide, 3);
  std::vector<double> whole(values.size());
  for (size_t i = 0; i < values.size(); ++i) whole[i] = std::round(values[i]);
  test::write_fits(dir / "plain.fits", 32, {kSide, kSide}, whole);
  test::write_tile_compressed(dir / "plain.fits", dir / "int32.fits.fz", GZIP_2);
  ImageBuffer image;
  read_fits_plane(dir / "int32.fits.fz", 1, 0, image);  // 32-bit GZIP_2 tiles read
  CHECK(image.data()[7 * kSide + 9] == static_cast<float>(whole[7 * kSide + 9]));
  // The same header saying its tiles hold 64-bit integers: refused before any tile is read.
  std::string bytes = file_bytes(dir / "int32.fits.fz");
  const std::string zbitpix = "ZBITPIX =                   32";
  const size_t at = bytes.find(zbitpix);
  REQUIRE(at != std::string::npos);
  bytes.replace(at + zbitpix.size() - 2, 2, "64");
  write_bytes(dir / "int64.fits.fz", bytes);
  CHECK_THAT(read_error(dir / "int64.fits.fz", 1),
             Catch::Contains("int64.fits.fz: HDU 1: 64-bit integer tiles compressed with GZIP_2, which CFITSIO cannot decompress"));
}

TEST_CASE("a gzip of several members, or cut short, is named as such when it reads short", "[fits][damaged]") {
  test::TempDir dir("fits_gzip_members");
  test::write_fits(dir / "plain.fits", -32, {kSide, kSide}, test::star_field(kSide, kSide, 9));
  const std::string bytes = file_bytes(dir / "plain.fits");
  for (const bool two : {false, true}) {
    const fs::path path = dir / (two ? "two.fits.gz" : "one.fits.gz");
    const size_t first = two ? bytes.size() / 2 : bytes.size();
    for (const auto& [offset, size] : {std::pair{size_t{0}, first}, std::pair{first, bytes.size() - first}}) {
      if (size == 0) continue;
      gzFile member = gzopen(path.c_str(), offset == 0 ? "wb" : "ab");  // "ab": a member appended
      REQUIRE(gzwrite(member, bytes.data() + offset, static_cast<unsigned>(size)) == static_cast<int>(size));
      gzclose(member);
    }
    INFO(path);
    if (two) {
      CHECK_THAT(read_error(path, 0), Catch::Contains("two.fits.gz: HDU 0 plane 0: cannot read pixels") &&
                                          Catch::Contains("a gzip of several members"));
    } else {
      CHECK(read_error(path, 0).empty());
    }
  }
  // One member cut off in the data (an interrupted transfer): said to end early.
  const std::string whole = file_bytes(dir / "one.fits.gz");
  write_bytes(dir / "cut.fits.gz", whole.substr(0, whole.size() * 3 / 4));
  CHECK_THAT(read_error(dir / "cut.fits.gz", 0),
             Catch::Contains("cut.fits.gz: HDU 0 plane 0: cannot read pixels") && Catch::Contains("gzip stream ends early"));
}

namespace {
std::string bzip2_of(const std::string& bytes) {
  std::string packed(bytes.size() + bytes.size() / 100 + 600, '\0');
  auto size = static_cast<unsigned>(packed.size());
  REQUIRE(BZ2_bzBuffToBuffCompress(packed.data(), &size, const_cast<char*>(bytes.data()), static_cast<unsigned>(bytes.size()),
                                   9, 0, 0) == BZ_OK);
  packed.resize(size);
  return packed;
}
}  // namespace

TEST_CASE("a bzip2 cut short, corrupt or of several streams is named as such, not by CFITSIO's account", "[fits][damaged]") {
  test::TempDir dir("fits_bzip2_damaged");
  test::write_fits(dir / "plain.fits", -32, {kSide, kSide}, test::star_field(kSide, kSide, 4));
  const std::string bytes = file_bytes(dir / "plain.fits");
  const std::string whole = bzip2_of(bytes);
  write_bytes(dir / "whole.fits.bz2", whole);
  CHECK(read_error(dir / "whole.fits.bz2", 0).empty());
  // Cut in the middle (CFITSIO: "could not allocate memory"), a byte flipped (a header of noise),
  // and two streams as pbzip2 writes them (CFITSIO reads the first: the data ends early).
  write_bytes(dir / "cut.fits.bz2", whole.substr(0, whole.size() / 2));
  std::string flipped = whole;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0xff);
  write_bytes(dir / "flipped.fits.bz2", flipped);
  write_bytes(dir / "two.fits.bz2", bzip2_of(bytes.substr(0, 2880 * 2)) + bzip2_of(bytes.substr(2880 * 2)));
  CHECK(read_error(dir / "cut.fits.bz2", 0) ==
        (dir / "cut.fits.bz2").string() + ": not a readable FITS file: its bzip2 stream ends early (truncated file)");
  CHECK(read_error(dir / "flipped.fits.bz2", 0) ==
        (dir / "flipped.fits.bz2").string() + ": not a readable FITS file: its bzip2 stream is corrupt (bad data or CRC)");
  CHECK_THAT(read_error(dir / "two.fits.bz2", 0),
             Catch::Contains("two.fits.bz2: HDU 0 plane 0: cannot read pixels") && Catch::Contains("a bzip2 of several streams") &&
                 !Catch::Contains("gzip"));
}
