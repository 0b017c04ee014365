// kernels::deblend_sources against sep.extract with deblending on, tagged [sep][sep_deblend]: it
// needs the fixture tools/compare_sep_deblend.py writes into IMFLOW_TEST_OUTPUT_DIR/sep_deblend
// (or into IMFLOW_SEP_DEBLEND_DIR): the same objects in the same order, pixel for pixel, and
// their measurements. The hand-made fields with known answers: test_deblend.cpp.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "imflow/kernels/deblend.hpp"
#include "imflow/kernels/label.hpp"
#include "imflow/kernels/measure.hpp"
#include "kernels/deblend_internal.hpp"
#include "sep_fixture.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using namespace imflow;
using namespace imflow::kernels;

namespace {
// One case of tools/compare_sep_deblend.py: SEP's detection inputs rebuilt as SEP builds them
// (data - back in float32, the threshold nsigma x rms as a float product, masked pixels never on).
struct SepCase {
  int64_t w = 0, h = 0;
  std::vector<float> sub, threshold;
  std::vector<int32_t> labels;
  int32_t nlabels = 0;
};

SepCase load_case(const fs::path& dir, const nlohmann::json& c) {
  SepCase k;
  const std::string name = c["name"];
  k.w = c["width"];
  k.h = c["height"];
  const size_t n = static_cast<size_t>(k.w * k.h);
  const auto image = test::read_f32(dir / (name + ".image.f32"), n);
  const auto back = test::read_f32(dir / (name + ".back.f32"), n);
  const auto rms = test::read_f32(dir / (name + ".rms.f32"), n);
  const float nsigma = static_cast<float>(c["nsigma"].get<double>());
  k.sub.resize(n);
  k.threshold.resize(n);
  std::vector<uint8_t> mask(n);
  for (size_t i = 0; i < n; ++i) {
    const bool valid = std::isfinite(image[i]);
    k.sub[i] = (valid ? image[i] : 0.0f) - back[i];
    k.threshold[i] = valid ? nsigma * rms[i] : std::numeric_limits<float>::infinity();
    mask[i] = valid && k.sub[i] > k.threshold[i];
  }
  k.labels.resize(n);
  k.nlabels = label_components({mask.data(), k.w, k.h}, 8, k.labels.data());
  return k;
}

struct DeblendAgreement {
  size_t objects = 0, sep_objects = 0, matched = 0;
  int64_t pixels_differing = 0;
  double worst_isolated_centroid = 0, worst_blended_centroid = 0, worst_isolated_flux = 0;
  std::vector<double> blended_flux;  // |flux - SEP's| / SEP's, matched blended objects
};

DeblendAgreement compare(const SepCase& k, const std::vector<int32_t>& ours, const DeblendResult& result,
                         const std::vector<int32_t>& sep_map, const nlohmann::json& sep) {
  DeblendAgreement a;
  a.objects = result.objects.size();
  a.sep_objects = sep.size();
  for (size_t i = 0; i < ours.size(); ++i) a.pixels_differing += ours[i] != sep_map[i];
  const Catalog catalog = measure_sources({k.sub.data(), k.w, k.h}, ours.data(), static_cast<int32_t>(ours.empty() ? 0 : result.objects.size()));
  // Objects pair up by their SEP centroid (a blended object's is its branch's, which the
  // allocation does not move): the nearest within 0.01 px, looked up in 1-pixel cells.
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> cells;
  for (size_t i = 0; i < result.objects.size(); ++i)
    cells[{static_cast<int64_t>(std::floor(result.objects[i].x)), static_cast<int64_t>(std::floor(result.objects[i].y))}]
        .push_back(i);
  for (size_t j = 0; j < sep.size(); ++j) {
    const double sx = test::number(sep[j]["x"]), sy = test::number(sep[j]["y"]);
    size_t best = result.objects.size();
    double best_d = 0.01;
    if (std::isfinite(sx) && std::isfinite(sy)) {
      const int64_t cx = static_cast<int64_t>(std::floor(sx)), cy = static_cast<int64_t>(std::floor(sy));
      for (int64_t ny = cy - 1; ny <= cy + 1; ++ny)
        for (int64_t nx = cx - 1; nx <= cx + 1; ++nx) {
          const auto found = cells.find({nx, ny});
          if (found == cells.end()) continue;
          for (const size_t i : found->second) {
            const double d = std::hypot(result.objects[i].x - sx, result.objects[i].y - sy);
            if (d < best_d) {
              best_d = d;
              best = i;
            }
          }
        }
    }
    if (best == result.objects.size()) continue;
    ++a.matched;
    const bool sep_blended = (sep[j]["flag"].get<int>() & 1) != 0;
    CHECK(sep_blended == result.objects[best].blended);
    const double flux_rel = std::fabs(catalog[best].flux - test::number(sep[j]["flux"])) /
                            std::max(std::fabs(test::number(sep[j]["flux"])), 1e-30);
    if (result.objects[best].blended) {
      a.worst_blended_centroid = std::max(a.worst_blended_centroid, best_d);
      a.blended_flux.push_back(flux_rel);
    } else {
      // An isolated object: the measure kernel's centroid on the new map is SEP's.
      a.worst_isolated_centroid = std::max({a.worst_isolated_centroid, std::fabs(catalog[best].x - sx),
                                            std::fabs(catalog[best].y - sy)});
      a.worst_isolated_flux = std::max(a.worst_isolated_flux, flux_rel);
    }
  }
  return a;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}
}  // namespace

TEST_CASE("deblend: the objects and segmentation maps of sep.extract with deblending", "[sep][sep_deblend]") {
  // The ctest fixture's directory, or another one made by the script (IMFLOW_SEP_DEBLEND_DIR).
  const auto [dir, cases] = test::sep_fixture("IMFLOW_SEP_DEBLEND_DIR", "sep_deblend");
  int compared = 0;
  for (const auto& c : cases["cases"]) {
    const std::string name = c["name"];
    const SepCase k = load_case(dir, c);
    // err = the RMS map without and with CLEAN; err = globalrms (one threshold) with CLEAN.
    for (const std::string variant : {"noclean", "clean", "global"}) {
      const bool clean = variant != "noclean", global = variant == "global";
      INFO(name << " " << variant);
      std::ifstream sep_file(dir / (name + "." + variant + ".sep_catalog.json"));
      REQUIRE(sep_file.good());
      const auto sep = nlohmann::json::parse(sep_file);
      const auto sep_map = test::read_i32(dir / (name + "." + variant + ".segmap.i32"), k.sub.size());
      DeblendInput input;
      input.detection = {k.sub.data(), k.w, k.h};
      input.threshold_map = global ? nullptr : k.threshold.data();
      // SEP: thresh * (float)err, a float product.
      input.threshold = static_cast<float>(c["nsigma"].get<double>()) * static_cast<float>(c["globalrms"].get<double>());
      input.labels = k.labels.data();
      input.nlabels = k.nlabels;
      std::vector<int32_t> global_labels;
      if (global) {
        std::vector<uint8_t> mask(k.sub.size());
        for (size_t i = 0; i < mask.size(); ++i)
          mask[i] = std::isfinite(k.threshold[i]) && k.sub[i] > input.threshold;
        global_labels.resize(k.sub.size());
        input.nlabels = label_components({mask.data(), k.w, k.h}, 8, global_labels.data());
        input.labels = global_labels.data();
      }
      DeblendParams params;  // SEP's defaults: 32 levels, 0.005, minarea 5, clean_param 1
      params.clean = clean;
      std::vector<int32_t> ours(k.sub.size());
      const auto start = std::chrono::steady_clock::now();
      const DeblendResult exact = deblend_sources(input, params, ours.data());
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const DeblendAgreement a = compare(k, ours, exact, sep_map, sep);
      // Most probable branch instead of SEP's draws.
      params.allocation = DeblendAllocation::most_probable;
      std::vector<int32_t> ours_mp(k.sub.size());
      const DeblendResult mp = deblend_sources(input, params, ours_mp.data());
      const DeblendAgreement b = compare(k, ours_mp, mp, sep_map, sep);
      std::printf("deblend %-32s %-7s SEP %5zu objects, ours %5zu (matched %5zu), pixels differing %lld; "
                  "worst centroid isolated %.2g px, blended %.2g px; flux isolated %.2g rel, blended median %.2g max %.2g "
                  "| most probable: %zu objects, %zu matched, pixels differing %lld, blended flux median %.2g p90 %.2g max %.2g"
                  " | %.3f s\n",
                  name.c_str(), variant.c_str(), a.sep_objects, a.objects, a.matched,
                  static_cast<long long>(a.pixels_differing), a.worst_isolated_centroid, a.worst_blended_centroid,
                  a.worst_isolated_flux, quantile(a.blended_flux, 0.5), quantile(a.blended_flux, 1.0), b.objects,
                  b.matched, static_cast<long long>(b.pixels_differing), quantile(b.blended_flux, 0.5),
                  quantile(b.blended_flux, 0.9), quantile(b.blended_flux, 1.0), seconds);
      ++compared;
      // SEP's draws: the same objects, in SEP's order, pixel for pixel.
      CHECK(a.objects == a.sep_objects);
      CHECK(a.matched == a.sep_objects);
      CHECK(a.pixels_differing == 0);
      // SEP's centroid sums float32 products (analyse.c): ~1e-5 px on large bright segments.
      CHECK(a.worst_isolated_centroid < 1e-4);
      CHECK(a.worst_blended_centroid < 1e-5);
      CHECK(a.worst_isolated_flux < 1e-6);
      CHECK(quantile(a.blended_flux, 1.0) < 1e-6);
    }
  }
  CHECK(compared >= 2);
}
