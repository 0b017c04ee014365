// imflow's whole pipeline with deblending (mesh background 64/3, segment 1.5 sigma in SEP's float32
// arithmetic, 8-connected label, deblend 32/0.005/minarea 5 with and without CLEAN, measure)
// against sep.extract with the same settings (tools/compare_sep_deblend.py, ctest fixture
// make_sep_deblend): the same label map as SEP's segmentation map, pixel for pixel, hence the
// same objects in the same order, and per object SEP's centroid, flux, moments, ellipse, their
// errors and its flags.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <vector>

#include "imflow/pipeline.hpp"
#include "imflow/source.hpp"
#include "sep_fixture.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;

namespace {
// 0 when both are NaN, infinite when only one is.
double relative(double ours, const nlohmann::json& theirs_json, double scale) {
  const double theirs = test::number(theirs_json);
  if (std::isnan(ours) || std::isnan(theirs)) return std::isnan(ours) && std::isnan(theirs) ? 0.0 : HUGE_VAL;
  return std::fabs(ours - theirs) / std::max({std::fabs(theirs), std::isnan(scale) ? 0.0 : scale, 1e-300});
}

double absolute(double ours, const nlohmann::json& theirs_json) {
  const double theirs = test::number(theirs_json);
  if (std::isnan(ours) || std::isnan(theirs)) return std::isnan(ours) && std::isnan(theirs) ? 0.0 : HUGE_VAL;
  return std::fabs(ours - theirs);
}

struct Worst {
  double centroid = 0, flux = 0, moment = 0, axis = 0, theta = 0, error = 0, ellipse = 0, flux_err = 0;
};
}  // namespace

TEST_CASE("the deblending pipeline gives sep.extract's catalog and segmentation map", "[sep][sep_deblend]") {
  const auto [dir, cases] = test::sep_fixture("IMFLOW_SEP_DEBLEND_DIR", "sep_deblend");
  int compared = 0;
  for (const auto& c : cases["cases"]) {
    const std::string name = c["name"];
    const int64_t w = c["width"], h = c["height"];
    const auto image = test::read_f32(dir / (name + ".image.f32"), static_cast<size_t>(w * h));
    // err = the RMS map with and without CLEAN; err = globalrms (segment relative_to: background).
    for (const std::string variant : {"clean", "noclean", "global"}) {
      INFO(name << " " << variant);
      const bool rms_errors = variant != "global";  // measure's errors use the RMS map: SEP's only with err=rms
      imflow::WorkItem item;
      item.pixels.resize(w, h);
      std::copy(image.begin(), image.end(), item.pixels.data());
      const auto pipeline = test::pipeline_from(
          "steps: [{background: {method: mesh, size: 64, filter_size: 3}}, {segment: {nsigma: " +
          std::to_string(c["nsigma"].get<double>()) + ", relative_to: " + (rms_errors ? "rms_map" : "background") +
          ", compare: float32}}, {label: {connectivity: 8}}, {deblend: {nthresh: 32, mincont: 0.005, clean: " +
          (variant == "noclean" ? "false" : "true") + ", clean_param: 1.0, minarea: 5}}, measure]");
      for (const auto& step : pipeline.steps) step->run_cpu(item);
      REQUIRE(item.catalog);
      std::ifstream sep_file(dir / (name + "." + variant + ".sep_catalog.json"));
      REQUIRE(sep_file.good());
      const auto sep = nlohmann::json::parse(sep_file);
      const auto segmap = test::read_i32(dir / (name + "." + variant + ".segmap.i32"), static_cast<size_t>(w * h));
      int64_t pixels_differing = 0;
      for (size_t i = 0; i < segmap.size(); ++i) pixels_differing += item.labels[i] != segmap[i];
      CHECK(pixels_differing == 0);
      REQUIRE(item.catalog->size() == sep.size());
      Worst worst;
      int64_t blended = 0, theta_diagonal = 0, non_positive = 0;
      for (size_t k = 0; k < sep.size(); ++k) {
        const imflow::Source& s = (*item.catalog)[k];
        const nlohmann::json& o = sep[k];
        INFO("object " << k + 1);
        CHECK(s.npix == o["npix"].get<int64_t>());
        CHECK(s.xmin == o["xmin"].get<int64_t>());
        CHECK(s.xmax == o["xmax"].get<int64_t>());
        CHECK(s.ymin == o["ymin"].get<int64_t>());
        CHECK(s.ymax == o["ymax"].get<int64_t>());
        const int flag = o["flag"].get<int>();
        CHECK(((s.flags & imflow::kFlagDeblended) != 0) == ((flag & 1) != 0));  // SEP's OBJ_MERGED
        CHECK(((s.flags & imflow::kFlagEdge) != 0) == ((flag & 2) != 0));       // SEP's OBJ_TRUNC
        blended += (flag & 1) != 0;
        // Thresholds <= 0 (where the bicubic RMS map undershoots below zero, docs/peers.md): an
        // object's flux can then be ~0 or negative; SEP computes its moments from it regardless,
        // imflow gives NaN (docs/astronomy.md). Pixels, box and flags are compared above.
        if (!(test::number(o["thresh"]) > 0 && test::number(o["flux"]) > 0)) {
          ++non_positive;
          continue;
        }
        worst.centroid = std::max({worst.centroid, absolute(s.x, o["x"]), absolute(s.y, o["y"])});
        worst.flux = std::max(worst.flux, relative(s.flux_iso, o["flux"], 0.0));
        const double scale = std::fabs(test::number(o["x2"])) + std::fabs(test::number(o["y2"]));
        worst.moment = std::max({worst.moment, relative(s.x2, o["x2"], scale), relative(s.y2, o["y2"], scale),
                                 relative(s.xy, o["xy"], scale)});
        // a^2 and b^2 are eigenvalues of the moments: compared as moment errors (relative to
        // x2 + y2), which a thin object's b (b << a) would magnify.
        worst.axis = std::max({worst.axis, relative(s.a * s.a, test::number(o["a"]) * test::number(o["a"]), scale),
                               relative(s.b * s.b, test::number(o["b"]) * test::number(o["b"]), scale)});
        // cxx, cyy, cxy invert the moments: relative to cxx + cyy and divided by the moments'
        // condition number a^2 / b^2 (the most an inverse can magnify a moment error).
        const double ellipse_scale = std::fabs(test::number(o["cxx"])) + std::fabs(test::number(o["cyy"]));
        const double condition =
            std::max(1.0, test::number(o["a"]) * test::number(o["a"]) / (test::number(o["b"]) * test::number(o["b"])));
        worst.ellipse = std::max({worst.ellipse, relative(s.cxx, o["cxx"], ellipse_scale) / condition,
                                  relative(s.cyy, o["cyy"], ellipse_scale) / condition,
                                  relative(s.cxy, o["cxy"], ellipse_scale) / condition});
        // theta as in tests/test_measure_sep.cpp: in units of the moment error that would explain
        // the difference; SEP's pi/4 for a diagonal pair with x2 == y2 aside.
        const double theta_sep = test::number(o["theta"]);
        if (s.x2 == s.y2 && s.xy < 0 && std::fabs(theta_sep - std::numbers::pi / 4) < 1e-6) {
          ++theta_diagonal;
        } else {
          double d = std::fabs(s.theta - theta_sep);
          d = std::min(d, std::fabs(d - std::numbers::pi));
          const double r = std::hypot(test::number(o["x2"]) - test::number(o["y2"]), 2 * test::number(o["xy"]));
          if (!(std::isnan(s.theta) && std::isnan(theta_sep)))
            worst.theta = std::max(worst.theta, std::isnan(d) ? HUGE_VAL : d * r / std::max(scale, 1e-300));
        }
        if (rms_errors) {
          const double error_scale = std::fabs(test::number(o["errx2"])) + std::fabs(test::number(o["erry2"]));
          worst.error = std::max({worst.error, relative(s.errx2, o["errx2"], error_scale),
                                  relative(s.erry2, o["erry2"], error_scale), relative(s.errxy, o["errxy"], error_scale)});
          worst.flux_err = std::max(worst.flux_err, relative(s.flux_iso_err, o["flux_err"], 0.0));
        }
      }
      std::printf("deblend pipeline %-32s %-7s %5zu objects (%lld blended, %lld with thresholds <= 0), pixels differing "
                  "%lld; worst: centroid %.2g px, flux_iso %.2g rel, moments %.2g, a^2/b^2 %.2g, theta %.2g (%lld diagonal), "
                  "cxx/cyy/cxy %.2g, errx2/erry2/errxy %.2g, flux_iso_err %.2g\n",
                  name.c_str(), variant.c_str(), item.catalog->size(), static_cast<long long>(blended),
                  static_cast<long long>(non_positive), static_cast<long long>(pixels_differing), worst.centroid, worst.flux, worst.moment, worst.axis,
                  worst.theta, static_cast<long long>(theta_diagonal), worst.ellipse, worst.error, worst.flux_err);
      ++compared;
      // SEP sums float32 products for an isolated object's centroid (imflow: float64), ~1e-5 px
      // on large bright segments; a deblended object's centre is SEP's own number.
      CHECK(worst.centroid < 1e-4);
      CHECK(worst.flux < 1e-5);
      CHECK(worst.moment < 1e-5);
      CHECK(worst.axis < 1e-5);
      CHECK(worst.theta < 1e-5);
      CHECK(worst.ellipse < 1e-5);
      CHECK(worst.error < 1e-5);
      CHECK(worst.flux_err < 1e-6);
    }
  }
  CHECK(compared >= 6);
}
