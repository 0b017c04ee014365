// kernels::deblend_sources (SExtractor/SEP deblending and CLEAN): hand-made fields with known
// answers, SEP's Lutz scan order, glibc's rand_r. The comparison with sep.extract itself:
// test_deblend_sep.cpp.
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


TEST_CASE("deblend: glibc's rand() stream, SExtractor's draws", "[deblend]") {
  // glibc 2.x: rand() without srand (seed 1), values 0-4 and 999995.
  std::vector<int32_t> stream;
  glibc_rand_stream(999996, stream);
  CHECK(stream[0] == 1804289383);
  CHECK(stream[1] == 846930886);
  CHECK(stream[2] == 1681692777);
  CHECK(stream[3] == 1714636915);
  CHECK(stream[4] == 1957747793);
  CHECK(stream[999995] == 908782911);
}
