// Shared by the CPU and GPU tiling tests: a FITS field with sources on tile borders (float,
// BLANK'd int16, RICE-compressed), and the tiled-vs-whole catalog comparison.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "imflow/summary.hpp"
#include "test_helpers.hpp"

namespace tiling_test {

namespace fs = std::filesystem;
using imflow::RunSummary;

inline std::string read_bytes(const fs::path& path) {
  std::ifstream stream(path, std::ios::binary);
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

// A FITS output's bytes with the BKG_MED, BKG_STD and THRESH cards blanked, and their values: a
// tiled run's background statistics differ from the whole image's in the last digits (summation
// order); everything else is identical.
inline std::pair<std::string, std::vector<double>> split_statistics(std::string bytes) {
  std::vector<double> values;
  for (size_t at = 0; at + 80 <= bytes.size() && at < 2880 * 8; at += 80) {
    const std::string key = bytes.substr(at, 8);
    if (key != "BKG_MED " && key != "BKG_STD " && key != "THRESH  ") continue;
    values.push_back(std::stod(bytes.substr(at + 10, 70)));
    bytes.replace(at, 80, std::string(80, ' '));
  }
  return {bytes, values};
}

// A FITS output (label map, bgsub, image) of a tiled run against the whole-image run's: the same
// bytes but for the statistics' cards (split_statistics), whose values agree to 1e-9 relative.
inline void check_same_fits_file(const fs::path& whole, const fs::path& tiled) {
  const auto [whole_bytes, whole_values] = split_statistics(read_bytes(whole));
  const auto [tiled_bytes, tiled_values] = split_statistics(read_bytes(tiled));
  CHECK(whole_bytes == tiled_bytes);
  REQUIRE(whole_values.size() == tiled_values.size());
  for (size_t v = 0; v < whole_values.size(); ++v) {
    CHECK(std::abs(tiled_values[v] - whole_values[v]) <= 1e-9 * std::abs(whole_values[v]));
  }
}

inline std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  while (std::getline(stream, field, ',')) fields.push_back(field);
  return fields;
}

// Catalog CSVs: integer columns and the peak equal, the other columns to float64 rounding.
inline void check_same_catalog(const fs::path& whole, const fs::path& tiled, double rtol = 1e-10) {
  std::ifstream a(whole), b(tiled);
  REQUIRE(a.good());
  REQUIRE(b.good());
  std::string header_a, header_b, row_a, row_b;
  std::getline(a, header_a);
  std::getline(b, header_b);
  REQUIRE(header_a == header_b);
  const std::vector<std::string> columns = split(header_a);
  int rows = 0;
  while (std::getline(a, row_a)) {
    REQUIRE(std::getline(b, row_b));
    ++rows;
    const auto fa = split(row_a), fb = split(row_b);
    REQUIRE(fa.size() == fb.size());
    // Moments (and their errors, and the ellipse parameters) can be ~0 while their terms are
    // large: compared at the scale of their group's diagonal (x2 + y2, errx2 + erry2, cxx + cyy).
    auto group_scale = [&](const char* first, const char* second) {
      double scale = 0.0;
      for (size_t c = 0; c < columns.size(); ++c) {
        if (columns[c] == first || columns[c] == second) scale += std::abs(std::stod(fa[c]));
      }
      return scale;
    };
    const double moment_scale = group_scale("x2", "y2"), error_scale = group_scale("errx2", "erry2"),
                 ellipse_scale = group_scale("cxx", "cyy");
    for (size_t c = 0; c < columns.size(); ++c) {
      const std::string& name = columns[c];
      // Functions of the columns compared here (the error ellipse of errx2..errxy, a/b), made by
      // the same host code for both; errtheta of a near-round error ellipse is ill-conditioned.
      if (name == "erra" || name == "errb" || name == "errtheta" || name == "elongation" || name == "ellipticity") continue;
      INFO(tiled.filename().string() << " row " << rows << " column " << name << ": whole " << fa[c] << " tiled " << fb[c]);
      const double x = std::stod(fa[c]), y = std::stod(fb[c]);
      const bool exact = name == "id" || name == "npix" || name == "peak" || name == "peak_x" || name == "peak_y" ||
                         name == "flags" || name.rfind("xm", 0) == 0 || name.rfind("ym", 0) == 0;
      if (exact) {
        CHECK((x == y || (std::isnan(x) && std::isnan(y))));
      } else {
        const double scale = (name == "x2" || name == "y2" || name == "xy" || name == "a" || name == "b") ? moment_scale
                             : (name == "errx2" || name == "erry2" || name == "errxy")                  ? error_scale
                             : (name == "cxx" || name == "cyy" || name == "cxy")                        ? ellipse_scale
                             : name == "theta"                                                          ? 1.0
                                                                                                        : 0.0;
        CHECK(((std::isnan(x) && std::isnan(y)) || std::abs(x - y) <= rtol * std::max({std::abs(x), std::abs(y), scale})));
      }
    }
  }
  CHECK_FALSE(std::getline(b, row_b));
  if (whole.filename().string().rfind("small", 0) != 0) CHECK(rows > 0);
}

inline std::map<std::string, nlohmann::json> records(const RunSummary& summary) {
  std::map<std::string, nlohmann::json> out;
  const nlohmann::json json = summary.to_json();  // (a range-for over to_json()["items"] would outlive the temporary)
  for (const auto& record : json["items"]) {
    out[fs::path(record["file"].get<std::string>()).filename().string() + "/" + std::to_string(record["hdu"].get<int>()) +
        "/" + std::to_string(record["plane"].get<int64_t>())] = record;
  }
  return out;
}

// A field with stars, some on tile borders and corners (for tiles of 64 and 50), a snake that
// crosses a border back and forth, a NaN patch, a bright line across three tiles.
inline std::vector<double> border_field(int width, int height, unsigned seed) {
  std::vector<double> image = test::star_field(width, height, seed, 30);
  auto star = [&](double cx, double cy, double flux, double sigma) {
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) {
        const double r2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
        if (r2 < 100 * sigma * sigma) image[y * width + x] += flux * std::exp(-r2 / (2 * sigma * sigma));
      }
  };
  star(63.5, 63.5, 3000, 2.5);   // on the corner of four 64-tiles
  star(49.5, 100.0, 2000, 1.5);  // on a 50-tile edge
  star(128.0, 30.0, 5000, 3.0);
  for (int x = 20; x < 200; ++x) image[140 * width + x] += 900;  // across three tiles
  for (int y = 150; y < 185; ++y) {                              // a snake across x = 64 and 100
    const int x0 = 60 + 8 * ((y / 4) % 2) + (y % 7 == 0 ? 35 : 0);
    for (int dx = 0; dx < 3; ++dx) image[y * width + x0 + dx] += 800;
  }
  for (int y = 10; y < 14; ++y)
    for (int x = 95; x < 105; ++x) image[y * width + x] = NAN;
  return image;
}

inline void make_inputs(const fs::path& in) {
  fs::create_directories(in);
  const int width = 230, height = 190;
  test::write_fits(in / "field.fits", -32, {width, height}, border_field(width, height, 11));
  std::vector<double> counts = border_field(width, height, 12);
  for (auto& v : counts) v = std::isnan(v) ? -32768.0 : std::round(std::min(v, 30000.0));  // BLANK where NaN
  const long long blank = -32768;
  test::write_fits(in / "int16.fits", 16, {width, height}, counts, 1.0, 0.0, &blank);
  // A small image in the same directory stays one item.
  test::write_fits(in / "small.fits", -32, {40, 30}, test::star_field(40, 30, 13));
  // A tile-compressed (RICE) copy: tiles decompress only the compression tiles they touch.
  fitsfile* file = nullptr;
  int status = 0;
  fits_create_file(&file, ("!" + (in / "rice.fits.fz").string() + "[compress R 100,10]").c_str(), &status);
  long naxes[2] = {width, height};
  fits_create_img(file, LONG_IMG, 2, naxes, &status);
  std::vector<int> ints(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) ints[i] = static_cast<int>(counts[i] < -30000 ? 900 : counts[i]);
  fits_write_img(file, TINT, 1, static_cast<LONGLONG>(ints.size()), ints.data(), &status);
  fits_close_file(file, &status);
  REQUIRE(status == 0);
}

}  // namespace tiling_test
