// measure's noise: map (each pixel's RMS, SEP with err = bkg.rms()) or global (SExtractor's
// WEIGHT_TYPE NONE: the mesh map subtracted, every error from the background's global RMS), on the
// catalog's and the photometry's error columns; refused beside a weight map.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "imflow/errors.hpp"
#include "imflow/step.hpp"
#include "imflow/work_item.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
WorkItem measured(const std::string& measure) {
  const Pipeline pipeline = test::pipeline_from(
      "device: cpu\nsteps: [{background: {method: mesh, size: 32}}, {segment: {relative_to: rms_map, nsigma: 3}}, "
      "label, {measure: " + measure + "}]\n");
  WorkItem item;
  const std::vector<double> sky = test::star_field(160, 128, 11, 24);
  item.pixels.resize(160, 128);
  for (size_t i = 0; i < sky.size(); ++i) item.pixels.data()[i] = static_cast<float>(sky[i] * (1.0 + (i % 160) / 80.0));
  for (const auto& step : pipeline.steps) step->run_cpu(item);
  REQUIRE(item.catalog.has_value());
  REQUIRE(item.catalog->size() >= 8);
  return item;
}
}  // namespace

TEST_CASE("noise: global takes every error from the global RMS; noise: map from each pixel's", "[measure]") {
  const WorkItem global = measured("{noise: global, apertures: [8], mask_neighbours: false}");
  const WorkItem map = measured("{apertures: [8], mask_neighbours: false}");
  const double rms = global.background->std;
  REQUIRE(map.catalog->size() == global.catalog->size());
  int differing = 0;
  for (size_t i = 0; i < global.catalog->size(); ++i) {
    const Source& g = (*global.catalog)[i];
    const Source& m = (*map.catalog)[i];
    INFO("source " << g.id);
    CHECK(g.flux_iso == m.flux_iso);  // the same map subtracted
    CHECK(g.flux_iso_err == Approx(std::sqrt(static_cast<double>(g.npix)) * rms).epsilon(1e-12));
    differing += g.flux_iso_err != m.flux_iso_err ? 1 : 0;
    // An aperture of diameter 8 inside the image: its error is sqrt(area) x rms, area ~ pi 4^2.
    const double aperture_err = global.photometry->row(i)[1];
    if (g.x > 5 && g.y > 5 && g.x < 154 && g.y < 122 && std::isfinite(aperture_err)) {
      CHECK(aperture_err / rms == Approx(std::sqrt(M_PI * 16.0)).epsilon(0.02));
    }
  }
  CHECK(differing == static_cast<int>(global.catalog->size()));  // the RMS map varies across the image
}

TEST_CASE("noise: global is refused beside a weight map, and must be map or global", "[measure][config]") {
  CHECK_THROWS_WITH(test::pipeline_from("input: {weight: {image: WHT, type: map_rms}}\n"
                                        "steps: [{background: {method: mesh}}, {segment: {relative_to: rms_map}}, label, "
                                        "{measure: {noise: global}}]\n"),
                    Catch::Contains("input.weight") && Catch::Contains("noise: global"));
  CHECK_THROWS_WITH(test::pipeline_from("steps: [background, segment, label, {measure: {noise: local}}]\n"),
                    Catch::Contains("noise") && Catch::Contains("not one of"));
}
