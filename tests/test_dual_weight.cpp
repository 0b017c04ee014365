// Dual-image mode with weight maps, as SExtractor's `WEIGHT_TYPE MAP_x,MAP_y` with two WEIGHT_IMAGEs:
// input.detect.weight is the detection image's noise (the threshold), input.weight the measured
// image's (the error columns), each rescaled to its own image's background noise.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "test_helpers.hpp"

using namespace imflow;
namespace fs = std::filesystem;

namespace {
constexpr int kDualSide = 128;
constexpr const char* kDualWeightSteps =
    "steps:\n"
    "  - background: {method: mesh, size: 32}\n"
    "  - segment: {nsigma: 5, relative_to: rms_map}\n"
    "  - label: {connectivity: 8}\n"
    "  - measure: {gain: 0, apertures: [6]}\n";

// A weight map of relative inverse variance `weight` (1% wobble), none in the block [40, 60)^2.
std::vector<double> dual_weight_map(double weight) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> wobble(0.99, 1.01);
  std::vector<double> map(kDualSide * kDualSide);
  for (int y = 0; y < kDualSide; ++y)
    for (int x = 0; x < kDualSide; ++x) map[y * kDualSide + x] = x >= 40 && x < 60 && y >= 40 && y < 60 ? 0.0 : weight * wobble(rng);
  return map;
}

struct DualRun {
  std::vector<std::map<std::string, std::string>> rows;
  nlohmann::json metrics;
};

// `input` (YAML) over in/f.fits with the steps above; the catalog's rows and the item's metrics.
DualRun run_dual_input(const fs::path& dir, const std::string& name, const std::string& input) {
  Pipeline pipeline = test::pipeline_from("device: cpu\noutput: {formats: [csv]}\ninput: " + input + "\n" + kDualWeightSteps);
  pipeline.input.dir = dir / "in";
  pipeline.output.dir = dir / name;
  const RunSummary summary = run_pipeline(pipeline, {});
  REQUIRE(summary.items() == 1);
  REQUIRE(summary.failed() == 0);
  return {test::csv_rows(dir / name / "f.cat.csv"), summary.to_json()["items"][0]["metrics"]};
}

double dual_column(const std::map<std::string, std::string>& row, const char* column) { return std::stod(row.at(column)); }
}  // namespace

TEST_CASE("dual-image weight maps: the detection image's sets the threshold, the measured image's the errors",
          "[dual][weight]") {
  test::TempDir dir("dual_weight");
  fs::create_directories(dir / "in");
  fs::create_directories(dir / "alone" / "in");
  // The detection image (noise 5 on 100) and a measured band 3x as bright and as noisy; one weight
  // map, 16x 1/sigma^2 of the detection image, given for both images as SExtractor's two names.
  const std::vector<double> field = test::star_field(kDualSide, kDualSide, 3, 12);
  std::vector<double> band(field.size());
  for (size_t i = 0; i < field.size(); ++i) band[i] = 3.0 * field[i];
  const std::vector<double> weight = dual_weight_map(16.0 / 25.0);
  test::write_fits(dir / "in" / "f.fits", -32, {kDualSide, kDualSide}, band);
  test::write_fits(dir / "in" / "f.det.fits", -32, {kDualSide, kDualSide}, field);
  test::write_fits(dir / "in" / "f.weight.fits", -32, {kDualSide, kDualSide}, weight);
  test::write_fits(dir / "alone" / "in" / "f.fits", -32, {kDualSide, kDualSide}, field);
  test::write_fits(dir / "alone" / "in" / "f.weight.fits", -32, {kDualSide, kDualSide}, weight);
  const std::string map = "{image: '{stem}.weight.fits', type: map_weight}";
  const DualRun alone = run_dual_input(dir / "alone", "out", "{patterns: ['f.fits'], weight: " + map + "}");
  const DualRun dual = run_dual_input(dir.path(), "dual", "{patterns: ['f.fits'], weight: " + map +
                                                         ", detect: {image: '{stem}.det.fits', weight: " + map + "}}");
  // Each map rescaled against its own image: the detection image's factor is the single image's
  // (about 4), the measured band's 3x that.
  const double single_scale = alone.metrics["weight_scale"].get<double>();
  CHECK(single_scale == Approx(4.0).epsilon(0.02));
  CHECK(dual.metrics["detect_weight_scale"].get<double>() == single_scale);
  const double measured_scale = dual.metrics["weight_scale"].get<double>();
  CHECK(measured_scale == Approx(3.0 * single_scale).epsilon(0.02));
  CHECK(dual.metrics["weight_bad_pixels"].get<double>() == 400.0);
  CHECK(dual.metrics["detect_weight_bad_pixels"].get<double>() == 400.0);
  // The detection image's objects and shapes; the band's fluxes; errors from the band's map (gain 0:
  // exactly the ratio of the two factors).
  REQUIRE(dual.rows.size() == alone.rows.size());
  REQUIRE(dual.rows.size() >= 5);
  for (size_t r = 0; r < dual.rows.size(); ++r) {
    INFO("row " << r);
    for (const char* column : {"x", "y", "npix", "a", "b", "errx2"}) CHECK(dual.rows[r].at(column) == alone.rows[r].at(column));
    CHECK(dual_column(dual.rows[r], "flux_iso") == Approx(3.0 * dual_column(alone.rows[r], "flux_iso")).epsilon(0.02));
    for (const char* error : {"flux_iso_err", "flux_aper_err_6"}) {
      CHECK(dual_column(dual.rows[r], error) == Approx(dual_column(alone.rows[r], error) * measured_scale / single_scale).epsilon(1e-6));
    }
  }
}

TEST_CASE("dual-image mode with the measured image's weight map only (BACKGROUND,MAP_WEIGHT)", "[dual][weight]") {
  test::TempDir dir("dual_measured_weight");
  fs::create_directories(dir / "in");
  // A measured band of uniform noise 15 whose weight map says 4x the variance in its last quarter
  // of columns: rescaled by the other three quarters' meshes, its errors there are twice the rest.
  const std::vector<double> field = test::star_field(kDualSide, kDualSide, 11, 16);
  std::vector<double> band(field.size()), weight(field.size());
  std::mt19937 rng(4);
  std::normal_distribution<double> noise(0.0, 15.0);
  for (int y = 0; y < kDualSide; ++y)
    for (int x = 0; x < kDualSide; ++x) {
      const size_t i = static_cast<size_t>(y * kDualSide + x);
      band[i] = 500.0 + 2.0 * (field[i] - 100.0) + noise(rng);
      weight[i] = x >= 96 ? 0.25 : 1.0;
    }
  test::write_fits(dir / "in" / "f.fits", -32, {kDualSide, kDualSide}, band);
  test::write_fits(dir / "in" / "f.det.fits", -32, {kDualSide, kDualSide}, field);
  test::write_fits(dir / "in" / "f.weight.fits", -32, {kDualSide, kDualSide}, weight);
  const std::string detect = "{patterns: ['f.fits'], detect: {image: '{stem}.det.fits'}";
  const DualRun plain = run_dual_input(dir.path(), "plain", detect + "}");
  const DualRun weighted = run_dual_input(dir.path(), "weighted", detect + ", weight: {image: '{stem}.weight.fits', type: map_weight}}");
  CHECK(weighted.metrics["weight_scale"].get<double>() == Approx(std::sqrt(15.0 * 15.0 + 4.0 * 25.0)).epsilon(0.05));
  CHECK_FALSE(weighted.metrics.contains("detect_weight_scale"));
  REQUIRE(weighted.rows.size() == plain.rows.size());  // detected as without the map
  REQUIRE(weighted.rows.size() >= 8);
  const double sigma = weighted.metrics["weight_scale"].get<double>();
  int right = 0;
  for (size_t r = 0; r < weighted.rows.size(); ++r) {
    INFO("row " << r);
    CHECK(weighted.rows[r].at("npix") == plain.rows[r].at("npix"));
    CHECK(weighted.rows[r].at("flux_iso") == plain.rows[r].at("flux_iso"));
    const bool in_right = dual_column(weighted.rows[r], "xmin") >= 96;
    right += in_right ? 1 : 0;
    const double expected = (in_right ? 2.0 : 1.0) * sigma * std::sqrt(dual_column(weighted.rows[r], "npix"));
    if (dual_column(weighted.rows[r], "xmin") >= 96 || dual_column(weighted.rows[r], "xmax") < 96) {
      CHECK(dual_column(weighted.rows[r], "flux_iso_err") == Approx(expected).epsilon(1e-5));
    }
  }
  CHECK(right >= 1);
}

TEST_CASE("input.detect.weight is checked when the pipeline is loaded; a missing one fails its item", "[dual][weight][config]") {
  const std::string mesh = "steps: [{background: {method: mesh}}, {segment: {relative_to: rms_map}}, label, measure]\n";
  const std::string global_segment = "steps: [{background: {method: mesh}}, segment, label, measure]\n";
  CHECK_THROWS_WITH(test::pipeline_from("input: {detect: {image: D, weight: {image: DW, type: map_weight, gain: true}}}\n" + mesh),
                    Catch::Contains("WEIGHT_GAIN scales the errors of the measured image"));
  CHECK_THROWS_WITH(test::pipeline_from("input: {detect: {image: D, weight: {image: DW, type: map_weight}}}\n" + global_segment),
                    Catch::Contains("input.detect.weight: a weight map sets the threshold per pixel"));
  CHECK_THROWS_WITH(test::pipeline_from("input: {detect: {image: D, weight: {image: DW}}}\n" + mesh),
                    Catch::Contains("a weight map needs type:"));
  // The measured image's map sets no threshold: segment may use the global RMS.
  const Pipeline pipeline = test::pipeline_from(
      "input: {detect: {image: D, weight: {image: DW, type: map_rms}}, weight: {image: W, type: map_var}}\n" + mesh);
  const YAML::Node resolved = pipeline.resolved()["input"];
  CHECK(resolved["detect"]["weight"]["type"].as<std::string>() == "map_rms");
  CHECK_FALSE(resolved["detect"]["weight"]["gain"].IsDefined());
  CHECK(resolved["weight"]["gain"].as<bool>());
  CHECK_NOTHROW(test::pipeline_from("input: {detect: {image: D}, weight: {image: W, type: map_weight}}\n" + global_segment));

  test::TempDir dir("dual_weight_missing");
  fs::create_directories(dir / "in");
  const std::vector<double> field = test::star_field(64, 64, 2);
  test::write_fits(dir / "in" / "f.fits", -32, {64, 64}, field);
  test::write_fits(dir / "in" / "f.det.fits", -32, {64, 64}, field);
  Pipeline missing = test::pipeline_from(
      "device: cpu\noutput: {formats: [csv]}\n"
      "input: {patterns: ['f.fits'], detect: {image: '{stem}.det.fits', weight: {image: '{stem}.det.wht.fits', type: map_weight}}}\n" +
      mesh);
  missing.input.dir = dir / "in";
  missing.output.dir = dir / "out";
  const RunSummary summary = run_pipeline(missing, {});
  REQUIRE(summary.failed() == 1);
  CHECK_THAT(summary.to_json()["items"][0]["error"].get<std::string>(),
             Catch::Contains("its detection weight map " + (dir / "in" / "f.det.wht.fits").string() + " does not exist"));
}
