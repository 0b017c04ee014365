// The measure step's gain: `gain`, or a FITS header keyword (`gain_keyword`: the item's HDU, else
// the primary header), used for the error columns and recorded as the catalog's GAIN card; a
// keyword that is not a number fails that item only, naming the file. The saturation level
// (`saturation`, `saturation_keyword`) flags the sources whose peak reaches it, whole or tiled.
#include <catch2/catch.hpp>
#include <fitsio.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "test_helpers.hpp"

using namespace imflow;
namespace fs = std::filesystem;

namespace {
// Write KEY = value (a number, or a string when `text` is set) into HDU `hdu` (0-based).
void write_key(const fs::path& path, int hdu, const char* key, double value, const char* text = nullptr) {
  fitsfile* file = nullptr;
  int status = 0;
  fits_open_file(&file, path.c_str(), READWRITE, &status);
  fits_movabs_hdu(file, hdu + 1, nullptr, &status);
  if (text != nullptr) {
    fits_update_key(file, TSTRING, key, const_cast<char*>(text), nullptr, &status);
  } else {
    fits_update_key(file, TDOUBLE, key, &value, nullptr, &status);
  }
  fits_close_file(file, &status);
  if (status != 0) throw std::runtime_error("test write_key failed: " + std::to_string(status));
}

double catalog_gain(const fs::path& catalog) {
  fitsfile* file = nullptr;
  int status = 0;
  double gain = -1.0;
  fits_open_file(&file, catalog.c_str(), READONLY, &status);
  fits_movabs_hdu(file, 2, nullptr, &status);
  fits_read_key(file, TDOUBLE, "GAIN", &gain, nullptr, &status);
  fits_close_file(file, &status);
  CHECK(status == 0);
  return gain;
}

RunSummary run_with_measure(const fs::path& in, const fs::path& out, const std::string& measure,
                            const std::string& settings = "") {
  Pipeline pipeline = test::pipeline_from(settings + "output: {formats: [csv, fits]}\ndevice: cpu\n"
                                          "steps: [background, segment, label, {measure: " + measure + "}]\n");
  pipeline.input.dir = in;
  pipeline.output.dir = out;
  return run_pipeline(pipeline, {});
}
}  // namespace

TEST_CASE("a numeric header keyword is read from the HDU, else the primary header", "[fits][gain]") {
  test::TempDir dir("gain_keyword");
  const fs::path mef = dir / "mef.fits";
  test::write_empty_primary(mef);
  test::write_fits(mef, -32, {8, 6}, std::vector<double>(48, 1.0), 1, 0, nullptr, false);
  test::write_fits(mef, -32, {8, 6}, std::vector<double>(48, 1.0), 1, 0, nullptr, false);
  write_key(mef, 0, "GAIN", 3.0);
  write_key(mef, 1, "GAIN", 5.5);
  write_key(mef, 2, "RDNOISE", 4.0);
  CHECK(read_fits_number_keyword(mef, 1, "GAIN") == 5.5);
  CHECK(read_fits_number_keyword(mef, 2, "GAIN") == 3.0);
  CHECK(read_fits_number_keyword(mef, 2, "gain") == 3.0);  // FITS names match in any case
  CHECK(read_fits_number_keyword(mef, 2, "RDNOISE") == 4.0);
  CHECK_FALSE(read_fits_number_keyword(mef, 1, "RDNOISE").has_value());  // HDU 2's card is not HDU 1's
  CHECK_FALSE(read_fits_number_keyword(mef, 1, "EGAIN").has_value());
  write_key(mef, 1, "GAIN", 0.0, "unknown");
  try {
    read_fits_number_keyword(mef, 1, "GAIN");
    FAIL("a text GAIN was read as a number");
  } catch (const InputError& error) {
    const std::string what = error.what();
    CHECK(what.find("mef.fits") != std::string::npos);
    CHECK(what.find("GAIN is not a number") != std::string::npos);
  }
  CHECK_THROWS_AS(read_fits_number_keyword(dir / "missing.fits", 0, "GAIN"), InputError);
}

TEST_CASE("a numeric keyword in the read's header records is CFITSIO's value of the file's card", "[fits][gain]") {
  test::TempDir dir("gain_records");
  const fs::path mef = dir / "mef.fits";
  test::write_empty_primary(mef);
  test::write_fits(mef, -32, {8, 6}, std::vector<double>(48, 1.0), 1, 0, nullptr, false);
  write_key(mef, 0, "GAIN", 3.0);
  write_key(mef, 1, "GAIN", 5.5);
  fitsfile* file = nullptr;
  int status = 0;
  fits_open_file(&file, mef.c_str(), READWRITE, &status);
  fits_movabs_hdu(file, 2, nullptr, &status);
  for (const char* card : {"EXPD    = 1.5D2 / a Fortran exponent", "QGAIN   = '2.25    '", "FLAG    = T",
                           "EMPTY   =", "CPLX    = (1.0, 2.0)", "TWICE   = 1", "TWICE   = 2"}) {
    fits_write_record(file, card, &status);
  }
  fits_close_file(file, &status);
  REQUIRE(status == 0);
  const std::vector<std::string> records = read_fits_header_records(mef, 1);
  for (const char* key : {"GAIN", "gain", "EXPD", "QGAIN", "FLAG", "EMPTY", "CPLX", "TWICE", "NONE"}) {
    INFO(key);
    std::optional<double> from_file, from_records;
    std::string file_error, records_error;
    try {
      from_file = read_fits_number_keyword(mef, 1, key);
    } catch (const InputError& error) {
      file_error = error.what();
    }
    try {
      from_records = read_fits_number_keyword(mef, 1, key, records);
    } catch (const InputError& error) {
      records_error = error.what();
    }
    CHECK(from_records == from_file);
    CHECK(records_error == file_error);
  }
  CHECK(read_fits_number_keyword(mef, 1, "EXPD", records) == 150.0);
  CHECK(read_fits_number_keyword(mef, 1, "TWICE", records) == 1.0);  // the first card, as CFITSIO's
  CHECK_THROWS_WITH(read_fits_number_keyword(mef, 1, "EMPTY", records), Catch::Contains("EMPTY is not a number"));

  // The records answer without the file where they hold the keyword, or for the primary HDU.
  const fs::path missing = dir / "missing.fits";
  std::string card = "GAIN    =                  7.0";
  card.resize(80, ' ');
  CHECK(read_fits_number_keyword(missing, 1, "GAIN", {card}) == 7.0);
  CHECK_FALSE(read_fits_number_keyword(missing, 0, "RDNOISE", {card}).has_value());
  CHECK_THROWS_AS(read_fits_number_keyword(missing, 1, "RDNOISE", {card}), InputError);  // the primary's, read
  CHECK(read_fits_number_keyword(mef, 1, "RDNOISE", {card}) == std::nullopt);
  CHECK(read_fits_number_keyword(mef, 1, "NONE", {}) == std::nullopt);
}

TEST_CASE("measure's gain_keyword sets each item's gain; the catalogs record it", "[engine][gain]") {
  test::TempDir dir("gain_engine");
  fs::create_directories(dir / "in");
  const fs::path mef = dir / "in" / "mef.fits";
  test::write_empty_primary(mef);
  test::write_fits(mef, -32, {96, 80}, test::star_field(96, 80, 3), 1, 0, nullptr, false);
  test::write_fits(mef, -32, {96, 80}, test::star_field(96, 80, 4), 1, 0, nullptr, false);
  write_key(mef, 0, "GAIN", 3.0);  // HDU 2 inherits the primary's
  write_key(mef, 1, "GAIN", 5.5);
  test::write_fits(dir / "in" / "plain.fits", -32, {96, 80}, test::star_field(96, 80, 5));
  test::write_fits(dir / "in" / "text.fits", -32, {96, 80}, test::star_field(96, 80, 6));
  write_key(dir / "in" / "text.fits", 0, "GAIN", 0.0, "high");

  const RunSummary summary = run_with_measure(dir / "in", dir / "out", "{gain: 1.25, gain_keyword: GAIN}");
  CHECK(summary.succeeded() == 3);
  REQUIRE(summary.failed() == 1);
  const auto json = nlohmann::json::parse(test::read_text(dir / "out" / "summary.json"));
  for (const auto& item : json["items"]) {
    if (item["status"] != "failed") continue;
    const std::string error = item["error"];
    const std::string file = (dir / "in" / "text.fits").string();
    CHECK(error == file + ": step measure: HDU 0: keyword GAIN is not a number");  // the file named once
    CHECK_FALSE(item.contains("nsources"));  // no catalog written
  }
  CHECK_FALSE(fs::exists(dir / "out" / "text.cat.csv"));
  CHECK(catalog_gain(dir / "out" / "mef.hdu1.cat.fits") == 5.5);
  CHECK(catalog_gain(dir / "out" / "mef.hdu2.cat.fits") == 3.0);
  CHECK(catalog_gain(dir / "out" / "plain.cat.fits") == 1.25);  // no keyword: `gain`

  // The same catalogs as with those gains given directly; another gain, other errors.
  fs::remove(dir / "in" / "text.fits");
  for (const auto& [gain, name] : {std::pair{"5.5", "mef.hdu1.cat.csv"}, std::pair{"3", "mef.hdu2.cat.csv"},
                                   std::pair{"1.25", "plain.cat.csv"}}) {
    INFO(name);
    const fs::path out = dir / ("out_" + std::string(gain));
    CHECK(run_with_measure(dir / "in", out, std::string("{gain: ") + gain + "}").failed() == 0);
    CHECK(test::read_text(out / name) == test::read_text(dir / "out" / name));
  }
  CHECK(test::read_text(dir / "out_1.25" / "mef.hdu1.cat.csv") != test::read_text(dir / "out" / "mef.hdu1.cat.csv"));
}

TEST_CASE("gain_keyword must be a FITS keyword name", "[config][gain]") {
  CHECK_THROWS_AS(test::pipeline_from("steps: [background, segment, label, {measure: {gain_keyword: DETECTOR_GAIN}}]"),
                  ConfigError);
  CHECK_THROWS_AS(test::pipeline_from("steps: [background, segment, label, {measure: {gain: -1}}]"), ConfigError);
  CHECK_NOTHROW(test::pipeline_from("steps: [background, segment, label, {measure: {gain: 2, gain_keyword: CCDGAIN}}]"));
}

TEST_CASE("saturation flags the sources whose peak reaches it; saturation_keyword reads it from the header",
          "[engine][gain]") {
  test::TempDir dir("saturation");
  fs::create_directories(dir / "in");
  const fs::path image = dir / "in" / "stars.fits";
  test::write_fits(image, -32, {96, 80}, test::star_field(96, 80, 11, 10));
  REQUIRE(run_with_measure(dir / "in", dir / "plain", "{}").succeeded() == 1);
  std::vector<double> peaks;
  for (const auto& row : test::csv_rows(dir / "plain" / "stars.cat.csv")) {
    CHECK((std::stoi(row.at("flags")) & kFlagSaturated) == 0);  // no level, no flag (SEP has none)
    peaks.push_back(std::stod(row.at("peak")));
  }
  REQUIRE(peaks.size() >= 4);
  std::sort(peaks.begin(), peaks.end());
  const double level = peaks[peaks.size() / 2];  // a source's own peak: "reaches" includes equality
  // Whole and in tiles of 32 (flagged where the tiles' catalog is merged): the same rule.
  for (const std::string settings : {"", "tiling: {size: 32}\n"}) {
    INFO(settings);
    const fs::path out = dir / (settings.empty() ? "whole" : "tiled");
    char measure[64];
    std::snprintf(measure, sizeof measure, "{saturation: %.17g}", level);
    REQUIRE(run_with_measure(dir / "in", out, measure, settings).succeeded() == 1);
    int saturated = 0;
    for (const auto& row : test::csv_rows(out / "stars.cat.csv")) {
      const bool flagged = (std::stoi(row.at("flags")) & kFlagSaturated) != 0;
      CHECK(flagged == (std::stod(row.at("peak")) >= level));
      saturated += flagged;
    }
    CHECK(saturated == static_cast<int>(peaks.size() - peaks.size() / 2));
  }
  // The header's SATURATE wins over `saturation`: every source at or above the lowest peak.
  write_key(image, 0, "SATURATE", peaks.front() - 0.5);  // below the lowest peak (the card holds 15 digits)
  REQUIRE(run_with_measure(dir / "in", dir / "keyword", "{saturation: 1e9, saturation_keyword: SATURATE}").succeeded() == 1);
  for (const auto& row : test::csv_rows(dir / "keyword" / "stars.cat.csv")) CHECK((std::stoi(row.at("flags")) & kFlagSaturated) != 0);
  CHECK_THROWS_WITH(run_with_measure(dir / "in", dir / "bad", "{saturation_keyword: 'NOT A KEY'}"),
                    Catch::Contains("saturation_keyword") && Catch::Contains("is not a FITS keyword"));
}
