// The aperture kernels against SEP 1.4.1 itself: tools/compare_sep_photometry.py (ctest fixture
// make_sep_photometry) runs SEP's documented recipes (kron_radius, FLUX_AUTO with the circular
// fallback, sum_circle at several radii with subpix 0 and 5, sum_circann, a bkgann circle, exact
// ellipse and elliptical annulus sums, flux_radius, winpos) on sep.extract's catalogs of the
// committed crops and a synthetic field; here imflow's kernels measure the same objects on the
// same pixels. Fluxes compare relative to max(|value|, its error), radii relative to the value,
// windowed positions in pixels; flags must be identical.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "imflow/kernels/aperture.hpp"
#include "sep_fixture.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
namespace k = imflow::kernels;
using nlohmann::json;

namespace {

// Differences of one quantity over all objects of all cases.
struct Agreement {
  std::vector<double> diffs;
  double limit = 0.0;
  const char* unit = "";
  size_t within() const {
    return static_cast<size_t>(std::count_if(diffs.begin(), diffs.end(), [&](double d) { return d <= limit; }));
  }
  double worst() const { return diffs.empty() ? 0.0 : *std::max_element(diffs.begin(), diffs.end()); }
  double median() const {
    std::vector<double> sorted = diffs;
    std::sort(sorted.begin(), sorted.end());
    return sorted.empty() ? 0.0 : sorted[sorted.size() / 2];
  }
};

// |ours - SEP's| / max(|SEP's|, floor); NaN on both sides agrees, on one side is infinitely off.
double rel_diff(double ours, const json& sep_json, double floor = 0.0) {
  const double sep = test::number(sep_json);
  if (std::isnan(ours) || std::isnan(sep)) return std::isnan(ours) == std::isnan(sep) ? 0.0 : HUGE_VAL;
  const double d = std::fabs(ours - sep);
  return d == 0.0 ? 0.0 : d / std::max(std::fabs(sep), floor);
}

double px_diff(double ours, const json& sep_json) {
  const double sep = test::number(sep_json);
  if (std::isnan(ours) || std::isnan(sep)) return std::isnan(ours) == std::isnan(sep) ? 0.0 : HUGE_VAL;
  return std::fabs(ours - sep);
}

std::string radius_key(double r, int subpix) {
  char key[48];
  std::snprintf(key, sizeof key, "circle_%g_sub%d", r, subpix);
  return key;
}

}  // namespace

TEST_CASE("aperture photometry equals SEP's recipes on sep.extract's catalogs", "[sep][sep_photometry]") {
  const auto [dir, cases] = test::sep_fixture("IMFLOW_SEP_PHOTOMETRY_DIR", "sep_photometry");
  REQUIRE(cases["sep_version"] == "1.4.1");
  REQUIRE(cases["cases"].size() >= 3);

  std::map<std::string, Agreement> agreement;
  auto flux_check = [&](const std::string& name) -> Agreement& {
    Agreement& a = agreement[name];
    a.limit = 1e-4;
    a.unit = "relative";
    return a;
  };
  size_t objects = 0, flag_mismatches = 0;
  for (const json& c : cases["cases"]) {
    const std::string name = c["name"];
    const int64_t w = c["width"], h = c["height"];
    const auto sub = test::read_f32(dir / (name + ".sub.f32"), static_cast<size_t>(w * h));
    const auto rms = test::read_f32(dir / (name + ".rms.f32"), static_cast<size_t>(w * h));
    const auto mask = test::read_f32(dir / (name + ".mask.f32"), static_cast<size_t>(w * h));
    k::ApertureImage image{{sub.data(), w, h}, rms.data(), 0.0, k::NoiseKind::stddev, mask.data(), 0.0, c["gain"]};
    k::ApertureImage no_noise{{sub.data(), w, h}};  // kron_radius, flux_radius, winpos: mask only
    no_noise.mask = mask.data();
    std::ifstream rows_in(dir / (name + ".photometry.json"));
    REQUIRE(rows_in.good());
    const json rows = json::parse(rows_in);
    REQUIRE(rows.size() == c["objects"].get<size_t>());
    for (const json& row : rows) {
      ++objects;
      const double x = row["x"], y = row["y"], a = row["a"], b = row["b"], theta = row["theta"];
      auto flags_equal = [&](int32_t ours, const char* key) {
        if (ours != row[key].get<int32_t>()) {
          ++flag_mismatches;
          UNSCOPED_INFO(name << " object at (" << x << ", " << y << "): " << key << " " << ours << " vs SEP's "
                             << row[key].get<int32_t>());
        }
      };
      auto compare_sum = [&](const std::string& key, const k::ApertureSum& s) {
        const double err = test::number(row[key + "_err"]);
        flux_check(key).diffs.push_back(rel_diff(s.sum, row[key], err));
        flux_check(key + "_err").diffs.push_back(rel_diff(s.error, row[key + "_err"]));
        flags_equal(s.flag, (key + "_flag").c_str());
      };

      const k::EllipseCoeffs e = k::ellipse_coeffs(a, b, theta);
      const k::KronRadius kron = k::kron_radius(no_noise, x, y, e.cxx, e.cyy, e.cxy, 6.0);
      Agreement& kr = agreement["kron_radius"];
      kr.limit = 1e-4;
      kr.unit = "relative";
      kr.diffs.push_back(rel_diff(kron.radius, row["kron_radius"]));
      flags_equal(kron.flag, "kron_flag");

      const k::AutoFlux autoflux = k::auto_flux(image, x, y, a, b, theta);
      CHECK(autoflux.circular == row["auto_circular"].get<bool>());
      CHECK(autoflux.kron_radius == kron.radius);
      compare_sum("flux_auto", {autoflux.flux, autoflux.flux_err, 0.0, autoflux.flag});

      for (const json& r : c["radii"]) {
        for (const int subpix : {0, 5}) {
          compare_sum(radius_key(r.get<double>(), subpix), k::sum_circle(image, x, y, r.get<double>(), subpix));
        }
      }
      compare_sum("circann_5_8", k::sum_circann(image, x, y, 5.0, 8.0, 0));
      compare_sum("circle_5_bkgann", k::sum_circle_bkgann(image, x, y, 5.0, 8.0, 12.0, 0));
      compare_sum("ellipse_3", k::sum_ellipse(image, x, y, a, b, theta, 3.0, 0));
      compare_sum("ellipann_2_4", k::sum_ellipann(image, x, y, a, b, theta, 2.0, 4.0, 0));

      const double fractions[] = {0.5, 0.9};
      double radii[2];
      flags_equal(k::flux_radius(no_noise, x, y, 6.0 * a, fractions, autoflux.flux, 5, radii), "flux_radius_flag");
      for (const auto& [key, ours] : {std::pair{"flux_radius_50", radii[0]}, std::pair{"flux_radius_90", radii[1]}}) {
        Agreement& fr = agreement[key];
        fr.limit = 1e-4;
        fr.unit = "relative";
        fr.diffs.push_back(rel_diff(ours, row[key]));
      }

      const k::WindowedPosition win = k::winpos(no_noise, x, y, 2.0 / 2.35 * radii[0]);
      flags_equal(win.flag, "winpos_flag");
      for (const auto& [key, ours] : {std::pair{"xwin", win.x}, std::pair{"ywin", win.y}}) {
        Agreement& wp = agreement[key];
        wp.limit = 1e-3;
        wp.unit = "px";
        wp.diffs.push_back(px_diff(ours, row[key]));
      }
    }
  }
  std::printf("aperture photometry against SEP %s: %zu objects in %zu images\n",
              cases["sep_version"].get<std::string>().c_str(), objects, cases["cases"].size());
  for (const auto& [name, a] : agreement) {
    std::printf("  %-22s worst %.3g median %.3g %s, %zu/%zu within %g\n", name.c_str(), a.worst(), a.median(), a.unit,
                a.within(), a.diffs.size(), a.limit);
    INFO(name << ": worst " << a.worst() << ", median " << a.median());
    CHECK(a.within() * 100 >= a.diffs.size() * 99);
  }
  CHECK(objects >= 200);
  CHECK(flag_mismatches == 0);
}
