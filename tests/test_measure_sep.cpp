// imflow's mesh background + segment (relative_to: rms_map) + 8-connected label + measure against
// sep.extract on the same pixels (tools/compare_sep_background.py --extract, ctest fixture
// make_sep_background): the same segments (bounding box and area), and flux_iso and its error,
// centroid and its errors, second moments, ellipse (a, b, theta; cxx, cyy, cxy) and edge flag per
// segment.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <tuple>
#include <vector>

#include "imflow/pipeline.hpp"
#include "imflow/source.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;

namespace {
using SegmentKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;  // bounding box, npix

double relative_difference(double ours, double theirs, double scale) {
  return std::fabs(ours - theirs) / std::max({std::fabs(theirs), scale, 1e-300});
}
}  // namespace

TEST_CASE("segments and measurements match sep.extract", "[sep]") {
  const fs::path dir = fs::path(IMFLOW_TEST_OUTPUT_DIR) / "sep_background";
  std::ifstream cases_file(dir / "cases.json");
  REQUIRE(cases_file.good());
  const auto cases = nlohmann::json::parse(cases_file);
  int compared_cases = 0;
  for (const auto& c : cases["cases"]) {
    if (!c.contains("sep_objects")) continue;
    const std::string name = c["name"];
    INFO(name);
    ++compared_cases;
    const int64_t w = c["width"], h = c["height"];
    imflow::WorkItem item;
    item.pixels.resize(w, h);
    const auto image = test::read_f32(dir / (name + ".image.f32"), static_cast<size_t>(w * h));
    std::copy(image.begin(), image.end(), item.pixels.data());
    const auto pipeline = test::pipeline_from(
        "steps: [{background: {method: mesh, size: " + std::to_string(c["mesh"].get<int>()) +
        ", filter_size: " + std::to_string(c["filter"].get<int>()) + "}}, {segment: {nsigma: " +
        std::to_string(c["extract_nsigma"].get<double>()) + ", relative_to: rms_map}}, {label: {connectivity: 8}}, {measure: {gain: " +
        std::to_string(c["extract_gain"].get<double>()) + "}}]");
    for (const auto& step : pipeline.steps) step->run_cpu(item);
    REQUIRE(item.catalog);

    std::ifstream sep_file(dir / (name + ".sep_catalog.json"));
    REQUIRE(sep_file.good());
    const auto sep = nlohmann::json::parse(sep_file);
    std::map<SegmentKey, const nlohmann::json*> by_segment;
    for (const auto& object : sep) {
      by_segment[{object["xmin"], object["xmax"], object["ymin"], object["ymax"], object["npix"]}] = &object;
    }
    CHECK(item.catalog->size() == sep.size());
    int64_t unmatched = 0, theta_diagonal = 0;
    double worst_flux = 0, worst_position = 0, worst_moment = 0, worst_axis = 0, worst_theta = 0;
    double worst_flux_err = 0, worst_position_err = 0, worst_ellipse = 0;
    for (const imflow::Source& s : *item.catalog) {
      const auto found = by_segment.find({s.xmin, s.xmax, s.ymin, s.ymax, s.npix});
      if (found == by_segment.end()) {
        ++unmatched;
        continue;
      }
      const nlohmann::json& o = *found->second;
      // SEP sums its flux in float32: relative to the segment's absolute flux scale.
      worst_flux = std::max(worst_flux, relative_difference(s.flux_iso, o["flux"], 0.0));
      worst_position = std::max({worst_position, std::fabs(s.x - o["x"].get<double>()), std::fabs(s.y - o["y"].get<double>())});
      // Moments can be ~0 while their terms are not: relative to x2 + y2.
      const double scale = std::fabs(o["x2"].get<double>()) + std::fabs(o["y2"].get<double>());
      worst_moment = std::max({worst_moment, relative_difference(s.x2, o["x2"], scale),
                               relative_difference(s.y2, o["y2"], scale), relative_difference(s.xy, o["xy"], scale)});
      worst_axis = std::max({worst_axis, relative_difference(s.a, o["a"], 0.0), relative_difference(s.b, o["b"], 0.0)});
      worst_flux_err = std::max(worst_flux_err, relative_difference(s.flux_iso_err, o["flux_err"], 0.0));
      // The centroid's (co)variances, relative to errx2 + erry2 as the moments are.
      const double error_scale = std::fabs(o["errx2"].get<double>()) + std::fabs(o["erry2"].get<double>());
      worst_position_err = std::max({worst_position_err, relative_difference(s.errx2, o["errx2"], error_scale),
                                     relative_difference(s.erry2, o["erry2"], error_scale),
                                     relative_difference(s.errxy, o["errxy"], error_scale)});
      // SEP stores cxx, cyy, cxy as float32 and they inherit the moments' differences (their inverse):
      // relative to cxx + cyy.
      const double ellipse_scale = std::fabs(o["cxx"].get<double>()) + std::fabs(o["cyy"].get<double>());
      worst_ellipse = std::max({worst_ellipse, relative_difference(s.cxx, o["cxx"], ellipse_scale),
                                relative_difference(s.cyy, o["cyy"], ellipse_scale),
                                relative_difference(s.cxy, o["cxy"], ellipse_scale)});
      // SEP takes pi/4 whenever x2 == y2, also for a diagonal pair with xy < 0 (at -pi/4; docs/astronomy.md).
      const double theta_sep = o["theta"];
      if (s.x2 == s.y2 && s.xy < 0 && std::fabs(theta_sep - std::numbers::pi / 4) < 1e-6) {
        ++theta_diagonal;
        CHECK(s.theta == Approx(-std::numbers::pi / 4));
      } else {
        // theta = atan2(2 xy, x2 - y2) / 2 is ill-conditioned for round sources: an error e (relative
        // to x2 + y2) in the moments moves it by up to e (x2 + y2) / r, r = sqrt((x2 - y2)^2 + 4 xy^2)
        // = a^2 - b^2. Compared in those units: the moment error that would explain the difference.
        double d = std::fabs(s.theta - theta_sep);
        d = std::min(d, std::fabs(d - std::numbers::pi));  // +-pi/2 are one direction
        const double r = std::hypot(o["x2"].get<double>() - o["y2"].get<double>(), 2 * o["xy"].get<double>());
        worst_theta = std::max(worst_theta, d * r / std::max(scale, 1e-300));
      }
      const bool sep_truncated = (o["flag"].get<int>() & 2) != 0;  // SEP's OBJ_TRUNC: at the image edge
      CHECK(((s.flags & imflow::kFlagEdge) != 0) == sep_truncated);
    }
    std::printf("sep.extract %-20s %6zu segments (SEP %zu), unmatched %lld; worst: flux_iso %.2g rel, centroid %.2g px, "
                "moments %.2g, a/b %.2g rel, theta %.2g (as a moment error; %lld diagonal pairs), flux_iso_err %.2g rel, "
                "errx2/erry2/errxy %.2g, cxx/cyy/cxy %.2g\n",
                name.c_str(), item.catalog->size(), sep.size(), static_cast<long long>(unmatched), worst_flux,
                worst_position, worst_moment, worst_axis, worst_theta, static_cast<long long>(theta_diagonal),
                worst_flux_err, worst_position_err, worst_ellipse);
    CHECK(unmatched == 0);
    CHECK(worst_flux < 1e-6);
    CHECK(worst_position < 1e-5);
    CHECK(worst_moment < 1e-5);
    CHECK(worst_axis < 1e-5);
    CHECK(worst_theta < 1e-5);
    CHECK(worst_flux_err < 1e-6);
    CHECK(worst_position_err < 1e-5);
    CHECK(worst_ellipse < 1e-5);
  }
  CHECK(compared_cases >= 2);
}
