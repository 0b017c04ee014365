// kernels::deblend_sources (SExtractor/SEP deblending and CLEAN): hand-made fields with known
// answers, SEP's Lutz scan order, glibc's rand_r; and, tagged [sep][sep_deblend] (it needs the
// fixture tools/compare_sep_deblend.py writes into IMFLOW_TEST_OUTPUT_DIR/sep_deblend, or into
// IMFLOW_SEP_DEBLEND_DIR), the same detections as sep.extract with deblending on: the same
// objects in the same order, pixel for pixel.
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
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using namespace imflow;
using namespace imflow::kernels;

namespace {
// A flat field with Gaussians (x, y, amplitude, sigma).
struct Star {
  double x, y, amp, sigma;
};

std::vector<float> field(int64_t w, int64_t h, const std::vector<Star>& stars) {
  std::vector<float> image(static_cast<size_t>(w * h), 0.0f);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      double v = 0.0;
      for (const Star& s : stars)
        v += s.amp * std::exp(-((x - s.x) * (x - s.x) + (y - s.y) * (y - s.y)) / (2 * s.sigma * s.sigma));
      image[static_cast<size_t>(y * w + x)] = static_cast<float>(v);
    }
  return image;
}

// Threshold (strict, float as SEP), 8-connected labels, deblend.
struct Run {
  std::vector<int32_t> labels, objects_map;
  int32_t nlabels = 0;
  DeblendResult result;
};

Run run(const std::vector<float>& image, int64_t w, int64_t h, float threshold, const DeblendParams& params,
        const float* threshold_map = nullptr) {
  Run r;
  std::vector<uint8_t> mask(image.size());
  for (size_t i = 0; i < image.size(); ++i)
    mask[i] = std::isfinite(image[i]) && image[i] > (threshold_map != nullptr ? threshold_map[i] : threshold);
  r.labels.resize(image.size());
  r.nlabels = label_components({mask.data(), w, h}, 8, r.labels.data());
  r.objects_map.resize(image.size());
  DeblendInput input;
  input.detection = {image.data(), w, h};
  input.threshold = threshold;
  input.threshold_map = threshold_map;
  input.labels = r.labels.data();
  input.nlabels = r.nlabels;
  r.result = deblend_sources(input, params, r.objects_map.data());
  return r;
}

// Detection-weighted centroid of object `id` in a label map.
std::pair<double, double> centroid(const std::vector<float>& image, const std::vector<int32_t>& map, int64_t w, int32_t id) {
  double s = 0, sx = 0, sy = 0;
  for (size_t i = 0; i < map.size(); ++i)
    if (map[i] == id) {
      s += image[i];
      sx += image[i] * static_cast<double>(static_cast<int64_t>(i) % w);
      sy += image[i] * static_cast<double>(static_cast<int64_t>(i) / w);
    }
  return {sx / s, sy / s};
}
}  // namespace

TEST_CASE("deblend: two Gaussians 6 px apart are split into two objects", "[deblend]") {
  const int64_t w = 40, h = 30;
  const auto image = field(w, h, {{16.0, 15.0, 100.0, 1.5}, {22.0, 15.2, 70.0, 1.5}});
  const Run r = run(image, w, h, 2.0f, DeblendParams{});
  REQUIRE(r.nlabels == 1);
  REQUIRE(r.result.objects.size() == 2);
  CHECK(r.result.segments_split == 1);
  for (const DeblendObject& o : r.result.objects) {
    CHECK(o.blended);
    CHECK(o.segment == 1);
  }
  // Branches in SEP's order: the walk meets both at the same level; the first completed in the
  // scan (last pixel first in raster order) first. Each object's branch barycentre is its star's.
  std::vector<double> xs = {r.result.objects[0].x, r.result.objects[1].x};
  std::sort(xs.begin(), xs.end());
  CHECK(xs[0] == Approx(16.0).margin(0.15));
  CHECK(xs[1] == Approx(22.0).margin(0.15));
  // Every pixel of the segment went to one of the two.
  int64_t npix = 0;
  for (size_t i = 0; i < r.labels.size(); ++i) {
    CHECK((r.labels[i] == 0) == (r.objects_map[i] == 0));
    npix += r.labels[i] != 0;
  }
  CHECK(r.result.objects[0].npix + r.result.objects[1].npix == npix);
  // The brighter star gets the bigger share; the full-pixel centroids sit near the stars.
  const auto c1 = centroid(image, r.objects_map, w, 1), c2 = centroid(image, r.objects_map, w, 2);
  CHECK(std::fabs(std::fabs(c1.first - c2.first) - 6.0) < 0.5);
}

TEST_CASE("deblend: a bump below mincont is not split off", "[deblend]") {
  const int64_t w = 40, h = 30;
  // The bump's flux above its level is far below 0.5% of the segment's flux.
  const auto image = field(w, h, {{15.0, 15.0, 1000.0, 2.0}, {26.0, 15.0, 6.0, 2.0}});
  const Run r = run(image, w, h, 2.0f, DeblendParams{});
  REQUIRE(r.nlabels == 1);
  REQUIRE(r.result.objects.size() == 1);
  CHECK_FALSE(r.result.objects[0].blended);
  CHECK(r.result.segments_split == 0);
  // With a lower contrast the same bump is an object.
  DeblendParams low;
  low.mincont = 1e-5;
  const Run r2 = run(image, w, h, 2.0f, low);
  CHECK(r2.result.objects.size() == 2);
}

TEST_CASE("deblend: a triple is split into three", "[deblend]") {
  const int64_t w = 50, h = 50;
  const auto image = field(w, h, {{18.0, 20.0, 100.0, 1.6}, {25.0, 20.0, 80.0, 1.6}, {21.5, 26.5, 90.0, 1.6}});
  const Run r = run(image, w, h, 2.0f, DeblendParams{});
  REQUIRE(r.nlabels == 1);
  REQUIRE(r.result.objects.size() == 3);
  // Each branch barycentre near one star, each star found once.
  const std::vector<std::pair<double, double>> stars = {{18.0, 20.0}, {25.0, 20.0}, {21.5, 26.5}};
  std::set<size_t> found;
  for (const DeblendObject& o : r.result.objects) {
    CHECK(o.blended);
    for (size_t k = 0; k < stars.size(); ++k)
      if (std::hypot(o.x - stars[k].first, o.y - stars[k].second) < 0.3) found.insert(k);
  }
  CHECK(found.size() == 3);
}

TEST_CASE("deblend: nthresh 1 or mincont 1 keeps the segments, in SEP's order", "[deblend]") {
  const int64_t w = 64, h = 48;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> ux(3, 61), uy(3, 45), ua(5, 60);
  std::vector<Star> stars;
  for (int i = 0; i < 25; ++i) stars.push_back({ux(rng), uy(rng), ua(rng), 1.2});
  const auto image = field(w, h, stars);
  for (int variant = 0; variant < 2; ++variant) {
    DeblendParams params;
    params.minarea = 1;
    params.clean = false;
    if (variant == 0) params.nthresh = 1;
    if (variant == 1) params.mincont = 1.0;
    const Run r = run(image, w, h, 1.0f, params);
    REQUIRE(r.nlabels > 5);
    REQUIRE(r.result.objects.size() == static_cast<size_t>(r.nlabels));
    // Object k is the segment SEP completes k-th: the same pixels, renumbered.
    const auto order = sep_segment_order(r.labels.data(), w, h, r.nlabels);
    for (size_t i = 0; i < r.labels.size(); ++i) {
      if (r.labels[i] == 0) {
        CHECK(r.objects_map[i] == 0);
        continue;
      }
      const int32_t id = r.objects_map[i];
      REQUIRE(id >= 1);
      CHECK(order[static_cast<size_t>(id - 1)] == r.labels[i]);
      CHECK(r.result.objects[static_cast<size_t>(id - 1)].segment == r.labels[i]);
      CHECK_FALSE(r.result.objects[static_cast<size_t>(id - 1)].blended);
    }
  }
  // minarea drops smaller segments.
  DeblendParams params;
  params.nthresh = 1;
  params.minarea = 30;
  params.clean = false;
  const Run r = run(image, w, h, 1.0f, params);
  std::vector<int64_t> sizes(static_cast<size_t>(r.nlabels) + 1, 0);
  for (const int32_t l : r.labels) ++sizes[static_cast<size_t>(l)];
  size_t big = 0;
  for (int32_t l = 1; l <= r.nlabels; ++l) big += sizes[static_cast<size_t>(l)] >= 30;
  CHECK(r.result.objects.size() == big);
  CHECK(big < static_cast<size_t>(r.nlabels));
}

TEST_CASE("deblend: CLEAN removes a detection in a bright star's wing", "[deblend]") {
  // A bright star whose wing rises above the threshold in a separate island is not possible
  // with one Gaussian; a faint star just outside the bright one's segment is, and CLEAN's
  // Moffat model of the bright star (beta 1: wide wings) predicts it.
  const int64_t w = 80, h = 60;
  const auto image = field(w, h, {{30.0, 30.0, 5000.0, 2.0}, {42.0, 30.0, 4.0, 1.0}});
  DeblendParams params;
  params.clean = false;
  const Run kept = run(image, w, h, 2.0f, params);
  REQUIRE(kept.nlabels == 2);
  CHECK(kept.result.objects.size() == 2);
  params.clean = true;
  const Run cleaned = run(image, w, h, 2.0f, params);
  REQUIRE(cleaned.result.objects.size() == 1);
  CHECK(cleaned.result.objects_cleaned == 1);
  CHECK(cleaned.result.objects[0].x == Approx(30.0).margin(0.01));
  // The cleaned object's pixels are background in the output (SEP drops them).
  for (size_t i = 0; i < image.size(); ++i)
    if (kept.objects_map[i] != 0 && std::fabs(static_cast<double>(i % w) - 42.0) < 3) CHECK(cleaned.objects_map[i] == 0);
}

TEST_CASE("deblend: SEP's scan order and pixel chains are those of one whole-image Lutz scan", "[deblend]") {
  const int64_t w = 97, h = 83;
  std::mt19937 rng(11);
  std::bernoulli_distribution on(0.45);
  std::vector<uint8_t> mask(static_cast<size_t>(w * h));
  for (auto& m : mask) m = on(rng);
  std::vector<int32_t> labels(mask.size());
  const int32_t n = label_components({mask.data(), w, h}, 8, labels.data());
  REQUIRE(n > 50);
  deblend_detail::LutzScratch scratch;
  deblend_detail::Components whole;
  deblend_detail::lutz_scan(mask.data(), w, h, 1, scratch, whole);
  REQUIRE(whole.size() == static_cast<size_t>(n));
  const auto order = sep_segment_order(labels.data(), w, h, n);
  std::vector<float> zeros(mask.size(), 0.0f);
  DeblendInput input;
  input.detection = {zeros.data(), w, h};
  input.labels = labels.data();
  input.nlabels = n;
  for (size_t c = 0; c < whole.size(); ++c) {
    const int32_t label = labels[static_cast<size_t>(whole.pixels[static_cast<size_t>(whole.offsets[c])])];
    REQUIRE(order[c] == label);
    // The chain of the component alone in its bounding box is the whole scan's.
    int64_t x0 = w, y0 = h, x1 = -1, y1 = -1;
    for (int64_t i = whole.offsets[c]; i < whole.offsets[c + 1]; ++i) {
      const int64_t p = whole.pixels[static_cast<size_t>(i)];
      x0 = std::min(x0, p % w);
      x1 = std::max(x1, p % w);
      y0 = std::min(y0, p / w);
      y1 = std::max(y1, p / w);
    }
    deblend_detail::SegmentPixels s;
    deblend_detail::gather_segment(input, label, x0, y0, x1 - x0 + 1, y1 - y0 + 1, scratch, s);
    REQUIRE(s.size() == whole.offsets[c + 1] - whole.offsets[c]);
    for (int64_t i = 0; i < s.size(); ++i) {
      const int64_t p = whole.pixels[static_cast<size_t>(whole.offsets[c] + i)];
      CHECK(s.x[static_cast<size_t>(i)] + x0 == p % w);
      CHECK(s.y[static_cast<size_t>(i)] + y0 == p / w);
    }
  }
}

TEST_CASE("deblend: glibc's rand_r and its jump ahead", "[deblend]") {
  uint32_t seed = 1;
  // glibc 2.x: rand_r(&seed) from seed 1.
  CHECK(glibc_rand_r(seed) == 476707713);
  CHECK(glibc_rand_r(seed) == 1186278907);
  CHECK(glibc_rand_r(seed) == 505671508);
  CHECK(glibc_rand_r(seed) == 2137716191);
  CHECK(glibc_rand_r(seed) == 936145377);
  CHECK(seed == 2111915288u);
  CHECK(glibc_rand_r_skip(1u, 5) == 2111915288u);
  uint32_t walked = 12345u;
  for (int i = 0; i < 1000; ++i) glibc_rand_r(walked);
  CHECK(glibc_rand_r_skip(12345u, 1000) == walked);
  CHECK(glibc_rand_r_skip(77u, 0) == 77u);
}

namespace {
std::vector<int32_t> read_i32(const fs::path& path, size_t n) {
  std::vector<int32_t> values(n);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(n * sizeof(int32_t)));
  if (in.gcount() != static_cast<std::streamsize>(n * sizeof(int32_t)))
    throw std::runtime_error(path.string() + ": fewer than " + std::to_string(n) + " int32 values");
  return values;
}

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

// A catalog number; null (SEP's NaN) as NaN.
double number(const nlohmann::json& v) { return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>(); }

struct Agreement {
  size_t objects = 0, sep_objects = 0, matched = 0;
  int64_t pixels_differing = 0;
  double worst_isolated_centroid = 0, worst_blended_centroid = 0, worst_isolated_flux = 0;
  std::vector<double> blended_flux;  // |flux - SEP's| / SEP's, matched blended objects
};

Agreement compare(const SepCase& k, const std::vector<int32_t>& ours, const DeblendResult& result,
                  const std::vector<int32_t>& sep_map, const nlohmann::json& sep) {
  Agreement a;
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
    const double sx = number(sep[j]["x"]), sy = number(sep[j]["y"]);
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
    const double flux_rel = std::fabs(catalog[best].flux - number(sep[j]["flux"])) /
                            std::max(std::fabs(number(sep[j]["flux"])), 1e-30);
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
  const char* other = std::getenv("IMFLOW_SEP_DEBLEND_DIR");
  const fs::path dir = other != nullptr ? fs::path(other) : fs::path(IMFLOW_TEST_OUTPUT_DIR) / "sep_deblend";
  std::ifstream cases_file(dir / "cases.json");
  REQUIRE(cases_file.good());
  const auto cases = nlohmann::json::parse(cases_file);
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
      const auto sep_map = read_i32(dir / (name + "." + variant + ".segmap.i32"), k.sub.size());
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
      const Agreement a = compare(k, ours, exact, sep_map, sep);
      // Most probable branch instead of SEP's draws.
      params.allocation = DeblendAllocation::most_probable;
      std::vector<int32_t> ours_mp(k.sub.size());
      const DeblendResult mp = deblend_sources(input, params, ours_mp.data());
      const Agreement b = compare(k, ours_mp, mp, sep_map, sep);
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
