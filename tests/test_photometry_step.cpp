// The measure step's photometry parameters end to end: their checks and error messages, the
// columns they add to the CSV, FITS and FITS_LDAC catalogs (names, units, vectors, magnitudes
// from a header zeropoint), and the configurations that refuse them (tiles, CUDA).
#include <catch2/catch.hpp>
#include <fitsio.h>

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/tiling.hpp"
#include "test_helpers.hpp"

using namespace imflow;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {
std::string measure_error_of(const std::string& measure) {
  try {
    test::pipeline_from("steps: [background, segment, label, {measure: " + measure + "}]\n");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "no error";
}

// The CSV as a header and rows of numbers by column name.
struct Csv {
  std::vector<std::string> names;
  std::vector<std::map<std::string, double>> rows;
};
Csv read_csv(const fs::path& path) {
  std::ifstream in(path);
  Csv csv;
  std::string line, cell;
  std::getline(in, line);
  std::istringstream header(line);
  while (std::getline(header, cell, ',')) csv.names.push_back(cell);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::map<std::string, double> row;
    for (size_t c = 0; std::getline(fields, cell, ','); ++c) row[csv.names.at(c)] = std::stod(cell);
    csv.rows.push_back(std::move(row));
  }
  return csv;
}

void write_zeropoint(const fs::path& path, double value) {
  fitsfile* file = nullptr;
  int status = 0;
  fits_open_file(&file, path.c_str(), READWRITE, &status);
  fits_update_key(file, TDOUBLE, "MAGZPT", &value, nullptr, &status);
  fits_close_file(file, &status);
  REQUIRE(status == 0);
}

// The repeat count (values per row) of each named column of `ldac`'s LDAC_OBJECTS.
std::map<std::string, long> ldac_repeats(const fs::path& ldac, const std::vector<std::string>& names) {
  fitsfile* file = nullptr;
  int status = 0, column = 0, type = 0;
  long repeat = 0, width = 0;
  std::map<std::string, long> repeats;
  fits_open_file(&file, ldac.c_str(), READONLY, &status);
  fits_movnam_hdu(file, BINARY_TBL, const_cast<char*>("LDAC_OBJECTS"), 0, &status);
  for (const std::string& name : names) {
    fits_get_colnum(file, CASESEN, const_cast<char*>(name.c_str()), &column, &status);
    fits_get_coltype(file, column, &type, &repeat, &width, &status);
    if (status == 0) repeats[name] = repeat;
    status = 0;
  }
  fits_close_file(file, &status);
  return repeats;
}

RunSummary run_photometry(const fs::path& in, const fs::path& out, const std::string& measure, const std::string& extra = "") {
  Pipeline pipeline = test::pipeline_from("output: {formats: [csv, fits, ldac]}\ndevice: cpu\n" + extra +
                                          "steps: [{background: {method: mesh, size: 32}}, segment, label, "
                                          "{measure: " + measure + "}]\n");
  pipeline.input.dir = in;
  pipeline.output.dir = out;
  return run_pipeline(pipeline, {});
}
}  // namespace

TEST_CASE("photometry parameters are checked", "[config][photometry]") {
  CHECK(measure_error_of("{auto: {kron_fact: 2.5, min_radius: 3.5}, apertures: [3, 7.5], flux_radius: [0.5, 0.9], "
                         "windowed: true, zeropoint: 25, zeropoint_keyword: MAGZPT, mask_neighbours: false}") == "no error");
  CHECK(measure_error_of("{auto: true}") == "no error");
  CHECK(measure_error_of("{auto: {kron_fact: 2.5, min_radius: 0, min_kron_radius: 3.5}, vignet: [35, 35]}") == "no error");
  CHECK_THAT(measure_error_of("{vignet: [35]}"), Contains("vignet") && Contains("[width, height]"));
  CHECK_THAT(measure_error_of("{vignet: [3.5, 4]}"), Contains("vignet") && Contains("whole pixels"));
  CHECK_THAT(measure_error_of("{vignet: [0, 4]}"), Contains("vignet"));
  CHECK_THAT(measure_error_of("{auto: {kron_factor: 2}}"), Contains("measure.auto.kron_factor") && Contains("unknown key"));
  CHECK_THAT(measure_error_of("{auto: {kron_fact: 0}}"), Contains("kron_fact") && Contains("out of range"));
  CHECK(measure_error_of("{auto: true, arithmetic: sextractor}") == "no error");
  CHECK_THAT(measure_error_of("{auto: true, arithmetic: float}"), Contains("arithmetic") && Contains("sextractor"));
  CHECK_THAT(measure_error_of("{auto: maybe}"), Contains("auto") && Contains("expected true, false"));
  CHECK_THAT(measure_error_of("{apertures: [3, -1]}"), Contains("apertures") && Contains("> 0"));
  CHECK_THAT(measure_error_of("{apertures: [3, 3]}"), Contains("listed twice"));
  CHECK_THAT(measure_error_of("{apertures: 3}"), Contains("apertures") && Contains("list of numbers"));
  CHECK_THAT(measure_error_of("{aperture_bkgann: [6, 9]}"), Contains("aperture_bkgann") && Contains("needs apertures"));
  CHECK_THAT(measure_error_of("{apertures: [3], aperture_bkgann: [9, 6]}"), Contains("rin < rout"));
  CHECK_THAT(measure_error_of("{flux_radius: [0.5, 1.5]}"), Contains("flux_radius") && Contains("(0, 1]"));
  CHECK_THAT(measure_error_of("{zeropoint_keyword: MAG ZP}"), Contains("zeropoint_keyword") && Contains("not a FITS keyword"));
  // Photometry reads pixels around each source, which tiles do not have.
  const auto tiled = [] {
    return test::pipeline_from("tiling: {size: 64}\nsteps: [background, segment, label, {measure: {apertures: [5]}}]\n");
  };
  try {
    const Pipeline pipeline = tiled();
    plan_tiling(pipeline);
    FAIL("a tiled pipeline with photometry was accepted");
  } catch (const ConfigError& error) {
    CHECK_THAT(std::string(error.what()), Contains("cannot run on tiles") && Contains("photometry"));
  }
}

TEST_CASE("photometry columns in the CSV, FITS and FITS_LDAC catalogs", "[engine][photometry]") {
  test::TempDir dir("photometry_columns");
  fs::create_directories(dir / "in");
  const fs::path image = dir / "in" / "stars.fits";
  test::write_fits(image, -32, {128, 96}, test::star_field(128, 96, 11, 12));
  write_zeropoint(image, 27.5);
  const RunSummary summary =
      run_photometry(dir / "in", dir / "out", "{auto: {}, apertures: [3, 7.5], flux_radius: [0.5, 0.9], windowed: true, "
                                              "zeropoint_keyword: MAGZPT, gain: 2}");
  REQUIRE(summary.failed() == 0);
  const Csv csv = read_csv(dir / "out" / "stars.cat.csv");
  REQUIRE(csv.rows.size() >= 8);
  const std::vector<std::string> added(csv.names.begin() + 36, csv.names.end());
  CHECK(added == std::vector<std::string>{"kron_radius", "flux_auto", "flux_auto_err", "mag_auto", "magerr_auto",
                                          "flags_auto", "flux_aper_3", "flux_aper_err_3", "mag_aper_3",
                                          "magerr_aper_3", "flux_aper_7.5", "flux_aper_err_7.5", "mag_aper_7.5",
                                          "magerr_aper_7.5", "flux_radius_0.5", "flux_radius_0.9", "xwin", "ywin",
                                          "XWIN_IMAGE", "YWIN_IMAGE", "flags_win", "flux_win", "flux_win_err",
                                          "snr_win", "x2win", "y2win", "xywin", "errx2win", "erry2win", "errxywin",
                                          "errawin", "errbwin", "errthetawin", "flags_phot", "mag_iso",
                                          "magerr_iso"});
  for (const auto& row : csv.rows) {
    CHECK(row.at("flux_aper_7.5") > row.at("flux_aper_3"));
    CHECK(row.at("flux_aper_err_3") > 0.0);
    CHECK(row.at("flux_radius_0.9") > row.at("flux_radius_0.5"));
    CHECK(row.at("XWIN_IMAGE") == row.at("xwin") + 1.0);
    CHECK(std::abs(row.at("xwin") - row.at("x")) < 1.0);
    CHECK_THAT(row.at("mag_auto"), WithinRel(27.5 - 2.5 * std::log10(row.at("flux_auto")), 1e-12));
    CHECK_THAT(row.at("magerr_aper_3"), WithinRel(1.0857 * row.at("flux_aper_err_3") / row.at("flux_aper_3"), 1e-12));
    CHECK_THAT(row.at("mag_iso"), WithinRel(27.5 - 2.5 * std::log10(row.at("flux_iso")), 1e-12));
    CHECK(row.at("snr_win") > 0.0);
    CHECK(row.at("errawin") >= row.at("errbwin"));
    CHECK(row.at("errbwin") > 0.0);
  }

  // FITS_LDAC: SExtractor's names, the apertures as vectors, KRON_RADIUS in its units.
  const std::map<std::string, long> expected = {{"FLUX_APER", 2},   {"MAGERR_APER", 2}, {"FLUX_RADIUS", 2},
                                                {"FLUX_AUTO", 1},   {"XWIN_IMAGE", 1},  {"MAG_ISO", 1},
                                                {"KRON_RADIUS", 1}, {"MAG_AUTO", 1}};
  std::vector<std::string> names;
  for (const auto& [name, size] : expected) names.push_back(name);
  CHECK(ldac_repeats(dir / "out" / "stars.ldac", names) == expected);
  fitsfile* file = nullptr;
  int status = 0, column = 0;
  fits_open_file(&file, (dir / "out" / "stars.ldac").c_str(), READONLY, &status);
  fits_movnam_hdu(file, BINARY_TBL, const_cast<char*>("LDAC_OBJECTS"), 0, &status);
  std::vector<double> apertures(2), kron(1);
  fits_get_colnum(file, CASESEN, const_cast<char*>("FLUX_APER"), &column, &status);
  fits_read_col(file, TDOUBLE, column, 1, 1, 2, nullptr, apertures.data(), nullptr, &status);
  fits_get_colnum(file, CASESEN, const_cast<char*>("KRON_RADIUS"), &column, &status);
  fits_read_col(file, TDOUBLE, column, 1, 1, 1, nullptr, kron.data(), nullptr, &status);
  fits_close_file(file, &status);
  REQUIRE(status == 0);
  // float32 in FITS_LDAC, as SExtractor writes them.
  CHECK(apertures[0] == static_cast<float>(csv.rows[0].at("flux_aper_3")));
  CHECK(apertures[1] == static_cast<float>(csv.rows[0].at("flux_aper_7.5")));
  CHECK(kron[0] == static_cast<float>(2.5 * csv.rows[0].at("kron_radius")));

  // The FITS catalog: the CSV's columns with units and the zeropoint card.
  fits_open_file(&file, (dir / "out" / "stars.cat.fits").c_str(), READONLY, &status);
  fits_movabs_hdu(file, 2, nullptr, &status);
  int columns = 0;
  double zeropoint = 0.0;
  char unit[FLEN_VALUE] = "";
  fits_get_num_cols(file, &columns, &status);
  fits_read_key(file, TDOUBLE, "MAGZERO", &zeropoint, nullptr, &status);
  fits_read_key(file, TSTRING, "TUNIT38", unit, nullptr, &status);
  fits_close_file(file, &status);
  REQUIRE(status == 0);
  CHECK(columns == static_cast<int>(csv.names.size()));
  CHECK(zeropoint == 27.5);
  CHECK(std::string(unit) == "adu");  // flux_auto
}

TEST_CASE("mask_neighbours: false and magnitudes of non-positive fluxes", "[engine][photometry]") {
  test::TempDir dir("photometry_options");
  fs::create_directories(dir / "in");
  test::write_fits(dir / "in" / "stars.fits", -32, {128, 96}, test::star_field(128, 96, 12, 12));
  // A zeropoint_keyword missing from the header falls back to `zeropoint`.
  REQUIRE(run_photometry(dir / "in", dir / "masked", "{apertures: [20], zeropoint_keyword: MAGZPT, zeropoint: 20}").failed() == 0);
  REQUIRE(run_photometry(dir / "in", dir / "plain", "{apertures: [20], zeropoint: 20, mask_neighbours: false}").failed() == 0);
  const Csv masked = read_csv(dir / "masked" / "stars.cat.csv"), plain = read_csv(dir / "plain" / "stars.cat.csv");
  REQUIRE(masked.rows.size() == plain.rows.size());
  int differ = 0;
  for (size_t i = 0; i < masked.rows.size(); ++i) differ += masked.rows[i].at("flux_aper_20") != plain.rows[i].at("flux_aper_20");
  CHECK(differ > 0);  // 20-pixel apertures reach the neighbours on a 128 x 96 field of 12 stars
  for (const auto& row : masked.rows) {
    if (row.at("flux_aper_20") > 0.0) continue;
    CHECK(row.at("mag_aper_20") == 99.0);
    CHECK(row.at("magerr_aper_20") == 99.0);
  }
  // Without a fallback the item fails, naming the keyword.
  const RunSummary missing = run_photometry(dir / "in", dir / "missing", "{apertures: [5], zeropoint_keyword: MAGZPT}");
  CHECK(missing.failed() == 1);
}

TEST_CASE("config/astro-photometry.yaml on the committed crops", "[engine][photometry]") {
  test::TempDir dir("photometry_config");
  Pipeline pipeline = load_pipeline(test::source_dir() / "config" / "astro-photometry.yaml");
  pipeline.input.dir = test::source_dir() / "datasets" / "samples";
  pipeline.input.patterns = {"*_crop.fits"};
  pipeline.output.dir = dir / "out";
  const RunSummary summary = run_pipeline(pipeline, {});
  REQUIRE(summary.succeeded() == 2);
  REQUIRE(summary.failed() == 0);
  const Csv csv = read_csv(dir / "out" / "isaac_crop.cat.csv");
  REQUIRE(csv.rows.size() > 50);
  int positive = 0;
  for (const auto& row : csv.rows) {
    if (!(row.at("flux_auto") > 0.0)) continue;
    ++positive;
    CHECK_THAT(row.at("mag_auto"), WithinRel(25.0 - 2.5 * std::log10(row.at("flux_auto")), 1e-12));  // no MAGZPT: 25
    CHECK(std::isfinite(row.at("flux_aper_10")));
    CHECK(row.at("flux_radius_0.5") > 0.0);
  }
  CHECK(positive > 50);
  // The LDAC file SCAMP reads with its default keys: FLUX_APER a 3-vector, one FLUX_RADIUS,
  // windowed positions and their error ellipses, FLUX_AUTO.
  const std::map<std::string, long> expected = {
      {"FLUX_APER", 3},     {"FLUX_RADIUS", 1},   {"XWIN_IMAGE", 1},    {"YWIN_IMAGE", 1},        {"FLUX_AUTO", 1},
      {"FLUXERR_AUTO", 1},  {"ERRAWIN_IMAGE", 1}, {"ERRBWIN_IMAGE", 1}, {"ERRTHETAWIN_IMAGE", 1}, {"SNR_WIN", 1},
      {"FLAGS_WIN", 1}};
  std::vector<std::string> names;
  for (const auto& [name, size] : expected) names.push_back(name);
  CHECK(ldac_repeats(dir / "out" / "isaac_crop.ldac", names) == expected);
}

TEST_CASE("VIGNET stamps and SExtractor's extraction keywords in FITS_LDAC", "[engine][photometry]") {
  test::TempDir dir("photometry_vignet");
  fs::create_directories(dir / "in");
  test::write_fits(dir / "in" / "stars.fits", -32, {128, 96}, test::star_field(128, 96, 11, 12));
  auto run_with = [&](const std::string& measure, const fs::path& out) {
    Pipeline pipeline = test::pipeline_from("output: {formats: [csv, ldac, bgsub]}\ndevice: cpu\n"
                                            "steps: [{background: {method: mesh, size: 32}}, segment, label, "
                                            "{measure: " + measure + "}]\n");
    pipeline.input.dir = dir / "in";
    pipeline.output.dir = out;
    return run_pipeline(pipeline, {});
  };
  REQUIRE(run_with("{}", dir / "plain").failed() == 0);
  REQUIRE(run_with("{vignet: [7, 5]}", dir / "stamps").failed() == 0);
  CHECK(ldac_repeats(dir / "plain" / "stars.ldac", {"VIGNET"}).empty());
  CHECK(ldac_repeats(dir / "stamps" / "stars.ldac", {"VIGNET"}) == std::map<std::string, long>{{"VIGNET", 35}});
  const Csv csv = read_csv(dir / "stamps" / "stars.cat.csv");
  REQUIRE(csv.rows.size() >= 8);
  // The stamp of the first source: 7 x 5 pixels of the background-subtracted image about its
  // pixel (int)(x + 0.49999), from 3 columns and 2 rows before it, other objects' pixels -1e30.
  fitsfile* file = nullptr;
  int status = 0, column = 0, dims = 0;
  long tdim[2] = {0, 0};
  std::vector<float> stamp(35), bgsub(128 * 96);
  fits_open_file(&file, (dir / "stamps" / "stars.ldac").c_str(), READONLY, &status);
  fits_movnam_hdu(file, BINARY_TBL, const_cast<char*>("LDAC_OBJECTS"), 0, &status);
  fits_get_colnum(file, CASESEN, const_cast<char*>("VIGNET"), &column, &status);
  fits_read_tdim(file, column, 2, &dims, tdim, &status);
  fits_read_col(file, TFLOAT, column, 1, 1, 35, nullptr, stamp.data(), nullptr, &status);
  fits_movnam_hdu(file, BINARY_TBL, const_cast<char*>("LDAC_IMHEAD"), 0, &status);
  long characters = 0;  // the header cell's TFORM nA
  fits_get_coltype(file, 1, nullptr, &characters, nullptr, &status);
  std::string header(static_cast<size_t>(characters), ' ');
  fits_read_tblbytes(file, 1, 1, characters, reinterpret_cast<unsigned char*>(header.data()), &status);
  fits_close_file(file, &status);
  REQUIRE(status == 0);
  CHECK(dims == 2);
  CHECK((tdim[0] == 7 && tdim[1] == 5));
  for (const char* key : {"SEXBKGND=", "SEXBKDEV=", "SEXTHLD =", "SEXGAIN ="}) CHECK(header.find(key) != std::string::npos);
  CHECK(header.rfind("END") > header.find("SEXGAIN ="));
  fits_open_file(&file, (dir / "stamps" / "stars.bgsub.fits").c_str(), READONLY, &status);
  fits_read_img(file, TFLOAT, 1, 128 * 96, nullptr, bgsub.data(), nullptr, &status);
  fits_close_file(file, &status);
  REQUIRE(status == 0);
  const auto ix = static_cast<int64_t>(csv.rows[0].at("x") + 0.49999), iy = static_cast<int64_t>(csv.rows[0].at("y") + 0.49999);
  int compared = 0;
  for (int64_t v = 0; v < 5; ++v) {
    for (int64_t u = 0; u < 7; ++u) {
      const int64_t px = ix - 3 + u, py = iy - 2 + v;
      const float value = stamp[v * 7 + u];
      if (px < 0 || py < 0 || px >= 128 || py >= 96) {
        CHECK(value == -1e30f);
      } else if (value != -1e30f) {
        CHECK(value == bgsub[py * 128 + px]);
        ++compared;
      }
    }
  }
  CHECK(compared > 10);
}

TEST_CASE("auto reads PHOT_AUTOPARAMS as SExtractor does; SEP's recipe loses a compact star's wings", "[photometry]") {
  test::TempDir dir("photometry_auto_default");
  fs::create_directories(dir / "in");
  // A Gaussian star of FWHM 3 px and flux 1e5 on a sky of 100 (noise 1).
  const double sigma = 3.0 / 2.3548, flux = 1e5;
  std::mt19937 rng(3);
  std::normal_distribution<double> sky(100.0, 1.0);
  std::vector<double> image(96 * 96);
  for (int y = 0; y < 96; ++y)
    for (int x = 0; x < 96; ++x) {
      const double r2 = (x - 47.3) * (x - 47.3) + (y - 48.6) * (y - 48.6);
      image[y * 96 + x] = sky(rng) + flux * std::exp(-r2 / (2 * sigma * sigma)) / (2 * M_PI * sigma * sigma);
    }
  test::write_fits(dir / "in" / "star.fits", -32, {96, 96}, image);
  const auto flux_auto = [&](const std::string& measure, const std::string& out) {
    REQUIRE(run_photometry(dir / "in", dir / out, measure).failed() == 0);
    const Csv csv = read_csv(dir / out / "star.cat.csv");
    REQUIRE(csv.rows.size() == 1);
    return csv.rows[0];
  };
  const auto sextractor = flux_auto("{auto: true}", "default");
  CHECK(sextractor.at("kron_radius") == Approx(3.5 / 2.5));  // raised to min_kron_radius / kron_fact
  CHECK(sextractor.at("flux_auto") == Approx(flux).epsilon(0.01));
  CHECK(flux_auto("{flux_radius: [0.5]}", "radius_only").at("flux_radius_0.5") == Approx(3.0 / 2).epsilon(0.05));
  // SEP's recipe: the circle of diameter 3.5 replaces the ellipse of 2.5 Kron radii (~4 px).
  const auto sep = flux_auto("{auto: {min_radius: 3.5, min_kron_radius: 0}}", "sep");
  CHECK(sep.at("flux_auto") < 0.75 * flux);
  CHECK(sep.at("flux_auto") > 0.55 * flux);
}
