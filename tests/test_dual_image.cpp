// Dual-image mode (input.detect) measures as SExtractor's `sex det.fits,meas.fits`: positions,
// shapes, deblending and the Kron radii on the detection image as read (a detection filter only
// sets what is detected), fluxes on the measurement image.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "imflow/engine.hpp"
#include "test_helpers.hpp"

using namespace imflow;
namespace fs = std::filesystem;

namespace {
constexpr int kFieldSide = 160;
constexpr const char* kFilteredSteps =
    "steps:\n"
    "  - {background: {method: mesh, size: 40}}\n"
    "  - {convolve: {kernel: [[1, 2, 1], [2, 4, 2], [1, 2, 1]], arithmetic: sep}}\n"
    "  - {segment: {nsigma: 2, relative_to: rms_map, compare: float32}}\n"
    "  - {label: {connectivity: 8}}\n"
    "  - {deblend: {minarea: 4}}\n"
    "  - {measure: {auto: {kron_fact: 2.5, min_radius: 0, min_kron_radius: 3.5}, apertures: [6]}}\n";

// The catalog of `image` (in its own directory), detected on `detection` when one is given.
std::string filtered_catalog_of(const fs::path& dir, const std::string& name, const std::vector<double>& image,
                       const std::vector<double>* detection) {
  const fs::path in = dir / name / "in", out = dir / name / "out";
  fs::create_directories(in);
  test::write_fits(in / "f.fits", -32, {kFieldSide, kFieldSide}, image);
  std::string input = "input: {patterns: ['f.fits']}\n";
  if (detection != nullptr) {
    test::write_fits(in / "f.det.fits", -32, {kFieldSide, kFieldSide}, *detection);
    input = "input: {patterns: ['f.fits'], detect: {image: '{stem}.det.fits'}}\n";
  }
  Pipeline pipeline = test::pipeline_from("device: cpu\noutput: {formats: [csv]}\n" + input + kFilteredSteps);
  pipeline.input.dir = in;
  pipeline.output.dir = out;
  const RunSummary summary = run_pipeline(pipeline, {});
  REQUIRE(summary.items() == 1);
  REQUIRE(summary.failed() == 0);
  return (out / "f.cat.csv").string();
}
}  // namespace

TEST_CASE("dual-image mode measures shapes and Kron radii on the unfiltered detection image", "[dual]") {
  test::TempDir dir("dual_image_filtered");
  const std::vector<double> detection = test::star_field(kFieldSide, kFieldSide, 17, 40);
  // The same image as its own detection image: the single-image catalog, byte for byte (the filter
  // made the objects; positions, shapes, deblending and photometry read the pixels as read; the
  // background, estimated before the filter, is the same for both images).
  const std::string alone = filtered_catalog_of(dir.path(), "alone", detection, nullptr);
  CHECK(test::read_text(filtered_catalog_of(dir.path(), "itself", detection, &detection)) == test::read_text(alone));
  // Another band (0.4 x the flux on another sky, its own noise): the detection image's objects,
  // positions, shapes and Kron radii; the measurement image's fluxes.
  std::vector<double> band(detection.size());
  std::mt19937 rng(5);
  std::normal_distribution<double> noise(0.0, 3.0);
  for (size_t i = 0; i < band.size(); ++i) band[i] = 300.0 + 0.4 * (detection[i] - 100.0) + noise(rng);
  const auto ours = test::csv_rows(filtered_catalog_of(dir.path(), "band", band, &detection));
  const auto theirs = test::csv_rows(alone);
  REQUIRE(ours.size() == theirs.size());
  REQUIRE(ours.size() >= 20);
  int fainter = 0;
  for (size_t r = 0; r < ours.size(); ++r) {
    INFO("row " << r);
    for (const char* column : {"x", "y", "a", "b", "theta", "npix", "flags", "kron_radius"}) {
      CHECK(ours[r].at(column) == theirs[r].at(column));
    }
    const double flux = std::stod(ours[r].at("flux_auto")), detected = std::stod(theirs[r].at("flux_auto"));
    if (detected > 500.0) {
      CHECK(flux == Approx(0.4 * detected).epsilon(0.25));
      fainter += flux < 0.6 * detected;
    }
  }
  CHECK(fainter > 10);
}
