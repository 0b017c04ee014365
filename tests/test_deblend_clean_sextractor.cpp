// deblend's clean_style: sextractor (SExtractor 2.25's CLEAN, src/kernels/deblend_clean_sextractor.cpp)
// against SEP's: hand-made objects where the two differ (a merged object's flux and pixels make
// its survivor eat another; an object released from SExtractor's CLEAN list before a later
// newcomer meets it), and a field through deblend_sources and measure (one label, the survivor's
// centre, the merged flux).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "imflow/kernels/deblend.hpp"
#include "imflow/kernels/label.hpp"
#include "imflow/kernels/measure.hpp"
#include "kernels/deblend_internal.hpp"

using namespace imflow;
using namespace imflow::kernels;
using namespace imflow::kernels::deblend_detail;

namespace {
// A round object of radius a at (x, y): flux, pixel count and CLEAN's threshold of its
// minarea-th pixel; the detection threshold 1.
SepObject round_object(double x, double y, float a, float flux, int64_t npix, float mthresh) {
  SepObject o;
  o.mx = x;
  o.my = y;
  o.a = o.b = a;
  o.cxx = o.cyy = 1.0f / (a * a);
  o.cxy = 0.0f;
  o.abcor = 1.0f;
  o.thresh = 1.0f;
  o.fdflux = flux;
  o.fdnpix = npix;
  o.mthresh = mthresh;
  return o;
}

// The Moffat profile (beta 1) of o at distance r, as CLEAN models it.
double profile(const SepObject& o, float flux, int64_t npix, double r) {
  double amp, alpha;
  clean_moffat(o, 1.0, flux, npix, amp, alpha);
  return amp / (1 + alpha * o.cxx * r * r);
}

// A bright star (5000 at the peak, sigma 2) and a faint one (4, sigma 1) in its wing, thresholded
// at 2 and labelled 8-connected: two segments.
struct TwoStars {
  int64_t w = 0, h = 0;
  std::vector<float> image;
  std::vector<uint8_t> mask;
  std::vector<int32_t> labels;
  int32_t nlabels = 0;
  TwoStars(int64_t width, int64_t height, double bx, double by, double fx, double fy)
      : w(width), h(height), image(static_cast<size_t>(width * height)), mask(image.size()), labels(image.size()) {
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        auto g = [&](double cx, double cy, double amp, double s) {
          return amp * std::exp(-((x - cx) * (x - cx) + (y - cy) * (y - cy)) / (2 * s * s));
        };
        image[static_cast<size_t>(y * w + x)] = static_cast<float>(g(bx, by, 5000, 2) + g(fx, fy, 4, 1));
      }
    for (size_t i = 0; i < image.size(); ++i) mask[i] = image[i] > 2.0f;
    nlabels = label_components({mask.data(), w, h}, 8, labels.data());
  }
  DeblendInput input() const {
    DeblendInput in;
    in.detection = {image.data(), w, h};
    in.threshold = 2.0f;
    in.labels = labels.data();
    in.nlabels = nlabels;
    return in;
  }
};

std::vector<SextractorCleanObject> listed(const std::vector<SepObject>& objects, int64_t rows) {
  std::vector<SextractorCleanObject> out;
  for (const SepObject& o : objects) {
    const int64_t y = static_cast<int64_t>(o.my);
    out.push_back({&o, y - rows, y + rows, y + rows});
  }
  return out;
}
}  // namespace

TEST_CASE("SExtractor's CLEAN: a merged object's flux makes its survivor eat a farther one", "[deblend]") {
  // A bright star A, a companion B 8 px away that A explains, and C 20 px away that A alone does
  // not explain but A with B merged into it (more flux and pixels) does.
  std::vector<SepObject> objects = {round_object(50.0, 50.0, 2.0f, 2513.0f, 50, 0.2f),
                                    round_object(58.0, 50.0, 2.0f, 1000.0f, 20, 0.2f),
                                    round_object(50.0, 70.0, 2.0f, 500.0f, 10, 0.0f)};
  const double alone = profile(objects[0], 2513.0f, 50, 20.0), grown = profile(objects[0], 3513.0f, 70, 20.0);
  REQUIRE(profile(objects[0], 2513.0f, 50, 8.0) > 0.2);
  REQUIRE(alone < grown);
  objects[2].mthresh = static_cast<float>(0.5 * (alone + grown));

  std::vector<const SepObject*> pointers = {&objects[0], &objects[1], &objects[2]};
  std::vector<uint8_t> survives;
  sep_clean(pointers, 1.0, survives);
  CHECK(survives == std::vector<uint8_t>{1, 0, 1});  // SEP drops B; A's own flux leaves C

  std::vector<int32_t> eaten_by;
  std::vector<float> flux;
  sextractor_clean(listed(objects, 3), 100, 1.0, 1024, 3000, 1, eaten_by, flux);
  CHECK(eaten_by == std::vector<int32_t>{-1, 0, 0});  // B, then C, merged into A
  CHECK(flux[0] == 2513.0f + 1000.0f + 500.0f);

  // Newcomers eat the objects listed before them: C first, then B, then A, the brightest last.
  std::vector<SepObject> reversed = {objects[2], objects[1], objects[0]};
  sextractor_clean(listed(reversed, 3), 100, 1.0, 1024, 3000, 1, eaten_by, flux);
  CHECK(eaten_by[2] == -1);
  CHECK(eaten_by[1] == 2);  // B on A's menu; C was not (A's own flux), so C survives
  CHECK(eaten_by[0] == -1);
  CHECK(flux[2] == 2513.0f + 1000.0f);
}

TEST_CASE("SExtractor's CLEAN: objects leave the list as the scan moves 1022 lines below them", "[deblend]") {
  // A huge object near the top and a faint one 1090 rows below it, within CLEAN's zone of
  // 10 (a1 + a2) and under A's modelled wing: SEP eats it, SExtractor has released A by then
  // when the image is taller than its 1024-line buffer (A's margin: 2 x 69 + 4 px).
  const std::vector<SepObject> objects = {round_object(100.0, 10.0, 120.0f, 1e9f, 100000, 0.0f),
                                          round_object(100.0, 1100.0, 2.0f, 50.0f, 10, 1e-7f)};
  REQUIRE(profile(objects[0], 1e9f, 100000, 1090.0) > 1e-7);
  std::vector<const SepObject*> pointers = {&objects[0], &objects[1]};
  std::vector<uint8_t> survives;
  sep_clean(pointers, 1.0, survives);
  CHECK(survives == std::vector<uint8_t>{1, 0});

  std::vector<SextractorCleanObject> list = {{&objects[0], 0, 20, 20}, {&objects[1], 1098, 1102, 1102}};
  std::vector<int32_t> eaten_by;
  std::vector<float> flux;
  sextractor_clean(list, 3000, 1.0, 1024, 3000, 1, eaten_by, flux);
  CHECK(eaten_by == std::vector<int32_t>{-1, -1});
  // Completed before the buffer slides (last row 1020, released after line 1022): eaten.
  list[1] = {&objects[1], 1016, 1020, 1020};
  sextractor_clean(list, 3000, 1.0, 1024, 3000, 1, eaten_by, flux);
  CHECK(eaten_by == std::vector<int32_t>{-1, 0});
  // Completed on line 1022 (last row 1021): still eaten without a filter; behind a 3 x 3 filter
  // (strip margin 2) the buffer slides a line earlier and A is gone.
  list[1] = {&objects[1], 1017, 1021, 1021};
  sextractor_clean(list, 3000, 1.0, 1024, 3000, 1, eaten_by, flux);
  CHECK(eaten_by == std::vector<int32_t>{-1, 0});
  sextractor_clean(list, 3000, 1.0, 1024, 3000, 2, eaten_by, flux);
  CHECK(eaten_by == std::vector<int32_t>{-1, -1});
  // A buffer taller than the image (MEMORY_BUFSIZE 4096) never slides: A eats the far object too.
  list[1] = {&objects[1], 1098, 1102, 1102};
  sextractor_clean(list, 3000, 1.0, 4096, 3000, 1, eaten_by, flux);
  CHECK(eaten_by == std::vector<int32_t>{-1, 0});
}

TEST_CASE("deblend clean_style sextractor: the cleaned object's pixels join its survivor's label", "[deblend]") {
  // The field of "CLEAN removes a detection in a bright star's wing": a faint star in a bright
  // one's wing, its own segment.
  const TwoStars field(80, 60, 30, 30, 42, 30);
  const int64_t w = field.w, h = field.h;
  const std::vector<float>& image = field.image;
  const std::vector<uint8_t>& mask = field.mask;
  const std::vector<int32_t>& labels = field.labels;
  std::vector<int32_t> sep_map(image.size()), sex_map(image.size());
  REQUIRE(field.nlabels == 2);
  DeblendInput input = field.input();
  DeblendParams params;
  std::vector<uint8_t> sep_detected = mask, sex_detected = mask;  // CLEAN clears the cleaned object's pixels
  input.detected = sep_detected.data();
  const DeblendResult sep = deblend_sources(input, params, sep_map.data());
  params.clean_style = DeblendCleanStyle::sextractor;
  input.detected = sex_detected.data();
  const DeblendResult sex = deblend_sources(input, params, sex_map.data());
  REQUIRE(sep.objects.size() == 1);
  REQUIRE(sex.objects.size() == 1);
  CHECK(sex.objects_cleaned == 1);
  CHECK_FALSE(sep.objects[0].merged);
  CHECK(sex.objects[0].merged);
  CHECK(sex.objects[0].x == sep.objects[0].x);  // the survivor's own centre
  int64_t all = 0;
  double flux = 0.0;
  for (size_t i = 0; i < image.size(); ++i) {
    CHECK(sex_map[i] == (labels[i] != 0 ? 1 : 0));  // both segments, one label
    // Both styles leave the survivor's own pixels detected, the cleaned one's not (SExtractor
    // pastes them back unblanked).
    CHECK(sep_detected[i] == (sep_map[i] != 0 ? 1 : 0));
    CHECK(sex_detected[i] == sep_detected[i]);
    all += labels[i] != 0;
    if (labels[i] != 0) flux += image[i];
  }
  CHECK(sex.objects[0].npix == all);
  CHECK(sex.objects[0].npix > sep.objects[0].npix);
  CHECK(std::count(sex_detected.begin(), sex_detected.end(), 1) == sep.objects[0].npix);
  CHECK(sex.objects[0].flux == Approx(flux).epsilon(1e-6));

  // measure: the merged flux over all the pixels, at the survivor's centre, not flagged as blended.
  const Catalog catalog = measure_deblended({image.data(), w, h}, sex_map.data(), 1, sex);
  REQUIRE(catalog.size() == 1);
  CHECK(catalog[0].x == sex.objects[0].x);
  CHECK(catalog[0].npix == all);
  CHECK(catalog[0].flux == Approx(flux).epsilon(1e-9));
  CHECK((catalog[0].flags & kFlagDeblended) == 0);
}

TEST_CASE("deblend clean_style sextractor: behind a filter a merged newcomer's last rows stay blanked", "[deblend]") {
  // The faint star 12 px below the bright one: its segment ends last, so it is the newcomer the
  // bright star eats, on the line after its last row (38); SExtractor's scan blanks the rows
  // within blank_lag of that line after the paste.
  const TwoStars field(60, 60, 30, 25, 30, 37);
  const int64_t w = field.w, h = field.h;
  const std::vector<uint8_t>& mask = field.mask;
  const std::vector<int32_t>& labels = field.labels;
  std::vector<int32_t> objects(mask.size());
  REQUIRE(field.nlabels == 2);
  DeblendInput input = field.input();
  DeblendParams params;
  params.clean_style = DeblendCleanStyle::sextractor;
  for (const int lag : {0, 2, 3}) {
    INFO("blank_lag " << lag);
    params.blank_lag = lag;
    std::vector<uint8_t> detected = mask;
    input.detected = detected.data();
    const DeblendResult result = deblend_sources(input, params, objects.data());
    REQUIRE(result.objects.size() == 1);
    REQUIRE(result.objects_cleaned == 1);
    int64_t faint_rows = 0;
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const size_t i = static_cast<size_t>(y * w + x);
        if (labels[i] == 0 || labels[i] == labels[static_cast<size_t>(25 * w + 30)]) {
          CHECK(detected[i] == mask[i]);  // the survivor's own pixels and the background
          continue;
        }
        faint_rows |= int64_t{1} << y;
        CHECK(detected[i] == (y > 39 - lag ? 2 : 0));
      }
    CHECK(faint_rows == ((int64_t{1} << 36) | (int64_t{1} << 37) | (int64_t{1} << 38)));
  }
}

TEST_CASE("deblend clean_style sextractor: a segment's threshold is its lowest pixel threshold, SEP's their mean",
          "[deblend]") {
  // Thresholds that vary per pixel (an RMS map): SExtractor deblends each segment from the lowest
  // of its pixels' (obj->dthresh = minthresh), SEP from their mean.
  const TwoStars field(60, 60, 20, 30, 50, 30);
  std::vector<float> thresholds(field.image.size());
  for (int64_t y = 0; y < field.h; ++y)
    for (int64_t x = 0; x < field.w; ++x) thresholds[static_cast<size_t>(y * field.w + x)] = 1.0f + 0.03f * static_cast<float>(x);
  DeblendInput input = field.input();
  input.threshold_map = thresholds.data();
  std::vector<uint8_t> detected = field.mask;
  input.detected = detected.data();
  DeblendParams params;
  params.clean = false;
  params.nthresh = 1;  // no split: each object is its segment, with the segment's threshold
  std::vector<int32_t> map(field.image.size());
  for (const DeblendCleanStyle style : {DeblendCleanStyle::sep, DeblendCleanStyle::sextractor}) {
    params.clean_style = style;
    const DeblendResult result = deblend_sources(input, params, map.data());
    REQUIRE(result.objects.size() == 2);
    for (size_t k = 0; k < result.objects.size(); ++k) {
      float lowest = 1e30f;
      double sum = 0.0;
      int64_t n = 0;
      for (size_t i = 0; i < map.size(); ++i) {
        if (map[i] != static_cast<int32_t>(k + 1)) continue;
        lowest = std::min(lowest, thresholds[i]);
        sum += thresholds[i];
        ++n;
      }
      REQUIRE(n > 0);
      const float mean = static_cast<float>(sum / static_cast<double>(n));
      INFO("object " << k << " lowest " << lowest << " mean " << mean);
      CHECK(lowest < mean - 0.01f);  // the thresholds do vary over the segment
      if (style == DeblendCleanStyle::sextractor) CHECK(result.objects[k].thresh == lowest);
      else CHECK(result.objects[k].thresh == Approx(mean).epsilon(1e-6));
    }
  }
}
