// Source measurements on hand-made label maps with known centroids, fluxes, peaks, moments and flags.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "imflow/kernels/background_mesh.hpp"
#include "imflow/kernels/deblend.hpp"
#include "imflow/kernels/measure.hpp"
#include "imflow/kernels/mesh_rows.hpp"

TEST_CASE("isolated deltas and a weighted pair", "[measure]") {
  // 5x4 image: a delta of 3 at (1,1); a pair (3,2)=1, (4,2)=3 -> centroid x = (3*1+4*3)/4 = 3.75.
  std::vector<float> image(20, 0.f);
  std::vector<int32_t> labels(20, 0);
  image[1 * 5 + 1] = 3.f;
  labels[1 * 5 + 1] = 1;
  image[2 * 5 + 3] = 1.f;
  image[2 * 5 + 4] = 3.f;
  labels[2 * 5 + 3] = labels[2 * 5 + 4] = 2;
  const auto catalog = imflow::kernels::measure_sources({image.data(), 5, 4}, labels.data(), 2);
  REQUIRE(catalog.size() == 2);
  CHECK(catalog[0].id == 1);
  CHECK(catalog[0].x == 1.0);
  CHECK(catalog[0].y == 1.0);
  CHECK(catalog[0].flux == 3.0);
  CHECK(catalog[0].npix == 1);
  CHECK(catalog[1].x == 3.75);
  CHECK(catalog[1].y == 2.0);
  CHECK(catalog[1].flux == 4.0);
  CHECK(catalog[1].npix == 2);
  CHECK(catalog[1].peak == 3.0);
  CHECK(catalog[1].peak_x == 4);
  CHECK(catalog[1].xmin == 3);
  CHECK(catalog[1].xmax == 4);
  CHECK(catalog[1].ymin == 2);
  CHECK(catalog[1].ymax == 2);
}

TEST_CASE("the first maximum in raster order is the peak", "[measure]") {
  std::vector<float> image = {5, 5, 1, 5};
  std::vector<int32_t> labels = {1, 1, 1, 1};
  const auto catalog = imflow::kernels::measure_sources({image.data(), 2, 2}, labels.data(), 1);
  CHECK(catalog[0].peak_x == 0);
  CHECK(catalog[0].peak_y == 0);
  CHECK(catalog[0].flux == 16.0);
  CHECK(catalog[0].x == Approx((0 * 5 + 1 * 5 + 0 * 1 + 1 * 5) / 16.0));
  CHECK(catalog[0].y == Approx((0 * 10 + 1 * 6) / 16.0));
}

namespace {
// An elliptical Gaussian (sigma_major along angle theta) of total flux ~1e4 on a constant level.
std::vector<float> gaussian_blob(int64_t w, int64_t h, double cx, double cy, double s_major, double s_minor,
                                 double theta, double level) {
  std::vector<float> image(static_cast<size_t>(w * h));
  const double c = std::cos(theta), s = std::sin(theta);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const double dx = x - cx, dy = y - cy;
      const double u = c * dx + s * dy, v = -s * dx + c * dy;
      image[y * w + x] = static_cast<float>(
          level + 1e4 / (2 * M_PI * s_major * s_minor) * std::exp(-0.5 * (u * u / (s_major * s_major) + v * v / (s_minor * s_minor))));
    }
  return image;
}
}  // namespace

TEST_CASE("second moments and ellipse of an analytic Gaussian (SEP's definitions)", "[measure]") {
  const int64_t w = 81, h = 71;
  const double theta = 0.5235987755982988;  // 30 degrees
  const double level = 100.0;
  const auto image = gaussian_blob(w, h, 40.3, 35.6, 3.0, 1.5, theta, level);
  std::vector<int32_t> labels(image.size(), 1);
  imflow::kernels::MeasureBackground background;
  background.level = level;
  const auto catalog = imflow::kernels::measure_sources({image.data(), w, h}, labels.data(), 1, background);
  const auto& s = catalog[0];
  // Continuous moments: x2 = a^2 cos^2 + b^2 sin^2, y2 = a^2 sin^2 + b^2 cos^2, xy = (a^2 - b^2) sin cos.
  const double a2 = 9.0, b2 = 2.25, c = std::cos(theta), sn = std::sin(theta);
  CHECK(s.flux_iso == Approx(1e4).epsilon(1e-5));
  CHECK(s.flux == Approx(1e4 + level * w * h).epsilon(1e-6));  // raw sum: the lesson's flux
  CHECK(s.x2 == Approx(a2 * c * c + b2 * sn * sn).epsilon(1e-4));
  CHECK(s.y2 == Approx(a2 * sn * sn + b2 * c * c).epsilon(1e-4));
  CHECK(s.xy == Approx((a2 - b2) * sn * c).epsilon(1e-4));
  CHECK(s.a == Approx(3.0).epsilon(1e-4));
  CHECK(s.b == Approx(1.5).epsilon(1e-4));
  CHECK(s.theta == Approx(theta).margin(1e-5));
  CHECK(s.flags == imflow::kFlagEdge);  // every pixel is labelled: the segment touches the edges
}

TEST_CASE("a single pixel is singular: SEP adds 1/12 to x2 and y2 and flags it", "[measure]") {
  std::vector<float> image(25, 0.f);
  std::vector<int32_t> labels(25, 0);
  image[12] = 7.f;
  labels[12] = 1;
  const auto s = imflow::kernels::measure_sources({image.data(), 5, 5}, labels.data(), 1)[0];
  CHECK(s.x2 == Approx(0.0833333));
  CHECK(s.y2 == Approx(0.0833333));
  CHECK(s.xy == 0.0);
  CHECK(s.a == Approx(std::sqrt(0.0833333)));
  CHECK(s.b == Approx(std::sqrt(0.0833333)));
  CHECK(s.theta == Approx(M_PI / 4));
  CHECK(s.flags == imflow::kFlagSingular);  // SEP's OBJ_SINGU
  CHECK(s.flux_iso == 7.0);
}

TEST_CASE("flags: image edge and a NaN pixel next to the segment", "[measure]") {
  // 6x4: source 1 at x = 0 (edge); source 2 interior with a NaN diagonal neighbour; source 3 interior.
  std::vector<float> image(24, 0.f);
  std::vector<int32_t> labels(24, 0);
  auto at = [](int x, int y) { return y * 6 + x; };
  image[at(0, 1)] = 5;
  labels[at(0, 1)] = 1;
  image[at(2, 1)] = 5;
  labels[at(2, 1)] = 2;
  image[at(3, 2)] = NAN;
  image[at(4, 1)] = 5;
  labels[at(4, 1)] = 3;  // (3, 2) is also its diagonal neighbour
  image[at(3, 2)] = NAN;
  const auto catalog = imflow::kernels::measure_sources({image.data(), 6, 4}, labels.data(), 3);
  using imflow::kFlagSingular;  // single pixels
  CHECK(catalog[0].flags == (imflow::kFlagEdge | kFlagSingular));
  CHECK(catalog[1].flags == (imflow::kFlagMaskedNeighbour | kFlagSingular));
  CHECK(catalog[2].flags == (imflow::kFlagMaskedNeighbour | kFlagSingular));
  image[at(3, 2)] = 0;
  const auto clean = imflow::kernels::measure_sources({image.data(), 6, 4}, labels.data(), 3);
  CHECK(clean[1].flags == kFlagSingular);
  CHECK(clean[2].flags == kFlagSingular);
}

TEST_CASE("flags: only the 8 neighbours count, infinities too, on the first and last rows", "[measure]") {
  // 40x5 (rows wider than a vector of floats): one-pixel sources away from the edges.
  const int width = 40, height = 5;
  std::vector<float> image(width * height, 0.f);
  std::vector<int32_t> labels(width * height, 0);
  auto at = [&](int x, int y) { return y * width + x; };
  auto source = [&](int x, int y, int32_t label) {
    image[at(x, y)] = 5;
    labels[at(x, y)] = label;
  };
  source(10, 1, 1);  // a NaN two rows below: not a neighbour
  image[at(10, 3)] = NAN;
  source(20, 1, 2);  // +infinity on the row above, one column left
  image[at(19, 0)] = INFINITY;
  source(30, 4, 3);  // last row; -infinity two columns right on the row above: not a neighbour
  image[at(32, 3)] = -INFINITY;
  source(35, 4, 4);  // last row; NaN on the row above, one column right
  image[at(36, 3)] = NAN;
  const auto catalog = imflow::kernels::measure_sources({image.data(), width, height}, labels.data(), 4);
  CHECK((catalog[0].flags & imflow::kFlagMaskedNeighbour) == 0);
  CHECK((catalog[1].flags & imflow::kFlagMaskedNeighbour) != 0);
  CHECK((catalog[2].flags & imflow::kFlagMaskedNeighbour) == 0);
  CHECK((catalog[3].flags & imflow::kFlagMaskedNeighbour) != 0);
}

TEST_CASE("merging the parts of a source cut by a tile border gives the whole", "[measure]") {
  const int64_t w = 64, h = 48;
  const auto image = gaussian_blob(w, h, 30.2, 20.7, 4.0, 2.0, 1.1, 10.0);
  std::vector<int32_t> labels(image.size(), 0);
  for (int64_t i = 0; i < w * h; ++i) labels[i] = image[i] > 12.0f ? 1 : 0;
  imflow::kernels::MeasureBackground background;
  background.level = 10.0;
  background.rms = 0.7;
  background.gain = 2.5;
  const auto whole = imflow::kernels::measure_sources({image.data(), w, h}, labels.data(), 1, background)[0];
  REQUIRE(whole.npix > 100);
  // Four tiles of 32 x 24 (the source spans all four), accumulated in image coordinates.
  std::vector<imflow::kernels::SourceSums> merged(1);
  for (int64_t ty = 0; ty < 2; ++ty)
    for (int64_t tx = 0; tx < 2; ++tx) {
      std::vector<float> tile(32 * 24);
      std::vector<int32_t> tile_labels(32 * 24);
      for (int64_t y = 0; y < 24; ++y)
        for (int64_t x = 0; x < 32; ++x) {
          tile[y * 32 + x] = image[(ty * 24 + y) * w + tx * 32 + x];
          tile_labels[y * 32 + x] = labels[(ty * 24 + y) * w + tx * 32 + x];
        }
      const auto part = imflow::kernels::accumulate_sources({tile.data(), 32, 24}, tile_labels.data(), 1, tx * 32,
                                                            ty * 24, background);
      merged[0].merge(part[0]);
    }
  const auto s = imflow::kernels::finish_sources(merged, w, h)[0];
  CHECK(s.npix == whole.npix);
  CHECK(s.flux == Approx(whole.flux).epsilon(1e-12));
  CHECK(s.x == Approx(whole.x).epsilon(1e-12));
  CHECK(s.y == Approx(whole.y).epsilon(1e-12));
  CHECK(s.flux_iso == Approx(whole.flux_iso).epsilon(1e-12));
  CHECK(s.x2 == Approx(whole.x2).epsilon(1e-11));
  CHECK(s.y2 == Approx(whole.y2).epsilon(1e-11));
  CHECK(s.xy == Approx(whole.xy).epsilon(1e-11));
  CHECK(s.a == Approx(whole.a).epsilon(1e-11));
  CHECK(s.b == Approx(whole.b).epsilon(1e-11));
  CHECK(s.theta == Approx(whole.theta).epsilon(1e-11));
  CHECK(s.flux_iso_err == Approx(whole.flux_iso_err).epsilon(1e-12));
  CHECK(s.errx2 == Approx(whole.errx2).epsilon(1e-11));
  CHECK(s.erry2 == Approx(whole.erry2).epsilon(1e-11));
  CHECK(s.errxy == Approx(whole.errxy).margin(1e-11 * (whole.errx2 + whole.erry2)));
  CHECK(s.cxx == Approx(whole.cxx).epsilon(1e-11));
  CHECK(s.cyy == Approx(whole.cyy).epsilon(1e-11));
  CHECK(s.cxy == Approx(whole.cxy).margin(1e-11 * (whole.cxx + whole.cyy)));
  CHECK(s.peak == whole.peak);
  CHECK(s.peak_x == whole.peak_x);
  CHECK(s.peak_y == whole.peak_y);
  CHECK(s.xmin == whole.xmin);
  CHECK(s.ymax == whole.ymax);
  CHECK(s.flags == whole.flags);
}

TEST_CASE("with a background map every measurement uses value - map (float32, as SEP's data - bkg)", "[measure]") {
  const std::vector<float> image = {0, 0, 0, 0, 110, 0, 0, 0, 0};
  const std::vector<float> map = {1, 1, 1, 1, 100, 1, 1, 1, 1};
  const std::vector<int32_t> labels = {0, 0, 0, 0, 1, 0, 0, 0, 0};
  imflow::kernels::MeasureBackground background;
  background.map = map.data();
  const auto s = imflow::kernels::measure_sources({image.data(), 3, 3}, labels.data(), 1, background)[0];
  CHECK(s.flux == 10.0);
  CHECK(s.flux_iso == 10.0);
  CHECK(s.peak == 10.0);
  CHECK(s.x == 1.0);
}

TEST_CASE("flux and centroid errors from the background rms and the gain (SEP's analyse.c rules)", "[measure]") {
  // A 4x3 source on a level of 10 with a global rms of 2 and a gain of 4 e-/ADU; one pixel below
  // the level adds no Poisson term. Expected values from the definitions, summed directly.
  const int64_t w = 6, h = 5;
  std::vector<float> image(static_cast<size_t>(w * h), 10.f);
  std::vector<int32_t> labels(image.size(), 0);
  const float values[3][4] = {{12, 15, 11, 9}, {14, 30, 22, 13}, {11, 18, 16, 12}};
  for (int64_t y = 0; y < 3; ++y)
    for (int64_t x = 0; x < 4; ++x) {
      image[(y + 1) * w + x + 1] = values[y][x];
      labels[(y + 1) * w + x + 1] = 1;
    }
  const double level = 10.0, rms = 2.0, gain = 4.0;
  double s0 = 0, sx = 0, sy = 0, v = 0;
  for (int64_t y = 0; y < 3; ++y)
    for (int64_t x = 0; x < 4; ++x) {
      const double wv = values[y][x] - level;
      s0 += wv;
      sx += wv * double(x + 1);
      sy += wv * double(y + 1);
      v += rms * rms + std::max(wv, 0.0) / gain;
    }
  const double xm = sx / s0, ym = sy / s0;
  double ex2 = 0, ey2 = 0, exy = 0, x2 = 0, y2 = 0, xy = 0;
  for (int64_t y = 0; y < 3; ++y)
    for (int64_t x = 0; x < 4; ++x) {
      const double wv = values[y][x] - level, var = rms * rms + std::max(wv, 0.0) / gain;
      const double dx = double(x + 1) - xm, dy = double(y + 1) - ym;
      ex2 += var * dx * dx / (s0 * s0);
      ey2 += var * dy * dy / (s0 * s0);
      exy += var * dx * dy / (s0 * s0);
      x2 += wv * dx * dx / s0;
      y2 += wv * dy * dy / s0;
      xy += wv * dx * dy / s0;
    }
  imflow::kernels::MeasureBackground background;
  background.level = level;
  background.rms = rms;
  background.gain = gain;
  const auto s = imflow::kernels::measure_sources({image.data(), w, h}, labels.data(), 1, background)[0];
  CHECK(s.flux_iso == Approx(s0).epsilon(1e-14));
  CHECK(s.flux_iso_err == Approx(std::sqrt(v)).epsilon(1e-14));
  CHECK(s.errx2 == Approx(ex2).epsilon(1e-12));
  CHECK(s.erry2 == Approx(ey2).epsilon(1e-12));
  CHECK(s.errxy == Approx(exy).margin(1e-12 * (ex2 + ey2)));
  // The ellipse parameters are the inverse of the moment matrix: [[cxx, cxy/2], [cxy/2, cyy]].
  const double det = x2 * y2 - xy * xy;
  REQUIRE(det > 0.00694);  // not singular: the moments are the plain ones
  CHECK(s.cxx == Approx(y2 / det).epsilon(1e-12));
  CHECK(s.cyy == Approx(x2 / det).epsilon(1e-12));
  CHECK(s.cxy == Approx(-2 * xy / det).epsilon(1e-12));
  CHECK(s.cxx * s.x2 + 0.5 * s.cxy * s.xy == Approx(1.0).epsilon(1e-12));

  // Without a gain only the background noise counts.
  background.gain = 0.0;
  const auto no_gain = imflow::kernels::measure_sources({image.data(), w, h}, labels.data(), 1, background)[0];
  CHECK(no_gain.flux_iso_err == Approx(rms * std::sqrt(12.0)).epsilon(1e-14));
}

TEST_CASE("a one-pixel source gets SEP's singular-case errors; no noise estimate gives NaN errors", "[measure]") {
  const std::vector<float> image = {0, 0, 0, 0, 9, 0, 0, 0, 0};
  const std::vector<int32_t> labels = {0, 0, 0, 0, 1, 0, 0, 0, 0};
  imflow::kernels::MeasureBackground background;
  background.rms = 3.0;
  const auto s = imflow::kernels::measure_sources({image.data(), 3, 3}, labels.data(), 1, background)[0];
  CHECK(s.flux_iso_err == 3.0);
  // errx2 = erry2 = 0 plus SEP's c = var * 0.08333 / flux^2 (errxy 0).
  CHECK(s.errx2 == Approx(9.0 * 0.08333 / 81.0).epsilon(1e-15));
  CHECK(s.erry2 == s.errx2);
  CHECK(s.errxy == 0.0);
  CHECK(s.x2 == 0.0833333);
  CHECK(s.cxx == Approx(1.0 / 0.0833333).epsilon(1e-15));
  CHECK(s.cyy == s.cxx);
  CHECK(s.cxy == 0.0);

  const auto no_noise = imflow::kernels::measure_sources({image.data(), 3, 3}, labels.data(), 1)[0];
  CHECK(std::isnan(no_noise.flux_iso_err));
  CHECK(std::isnan(no_noise.errx2));
  CHECK(std::isnan(no_noise.errxy));
  CHECK(no_noise.flux_iso == 9.0);  // the rest is measured as before
}

TEST_CASE("errors from the mesh grid's RMS rows equal those from the whole RMS map", "[measure]") {
  const int64_t w = 150, h = 90;
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(100.f, 5.f);
  std::vector<float> image(static_cast<size_t>(w * h));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) image[y * w + x] = noise(rng) + 0.2f * float(x);  // a sloped sky
  std::vector<int32_t> labels(image.size(), 0);
  for (int64_t y = 40; y < 46; ++y)
    for (int64_t x = 100; x < 109; ++x) {
      image[y * w + x] += 80.f;
      labels[y * w + x] = 1;
    }
  imflow::kernels::MeshParams params;
  params.mesh_width = params.mesh_height = 32;
  std::vector<float> back;
  imflow::kernels::MeshGrid grid;
  imflow::kernels::mesh_background({image.data(), w, h}, params, back, grid);
  std::vector<float> rms(image.size());
  imflow::kernels::MeshRows rows(grid);
  for (int64_t y = 0; y < h; ++y) rows.rms(y, rms.data() + y * w);
  imflow::kernels::MeasureBackground with_map;
  with_map.map = back.data();
  with_map.rms_map = rms.data();
  with_map.gain = 1.5;
  imflow::kernels::MeasureBackground with_grid = with_map;
  with_grid.rms_map = nullptr;
  with_grid.rms_grid = &grid;
  const auto a = imflow::kernels::measure_sources({image.data(), w, h}, labels.data(), 1, with_map)[0];
  const auto b = imflow::kernels::measure_sources({image.data(), w, h}, labels.data(), 1, with_grid)[0];
  CHECK(a.flux_iso_err == b.flux_iso_err);
  CHECK(a.errx2 == b.errx2);
  CHECK(a.erry2 == b.erry2);
  CHECK(a.errxy == b.errxy);
  // The local rms (~5 at x ~ 104) sets the error: sqrt(54 rms^2 + flux_iso / gain) with every
  // pixel ~80 above the sky.
  const double rms_here = rms[43 * w + 104];
  CHECK(rms_here == Approx(5.0).epsilon(0.25));
  CHECK(a.flux_iso_err == Approx(std::sqrt(54 * rms_here * rms_here + a.flux_iso / 1.5)).epsilon(0.02));
}

TEST_CASE("after deblend, flag 8 marks singular moments of either the deblend's analysis or the measured pixels", "[measure]") {
  // Two objects on a 6x3 image: a single pixel (singular moments where measured) and a 3x3-like
  // blob (regular moments); deblend's analysis (of the detection pixels) called neither, then the
  // second one, singular.
  std::vector<float> image(18, 0.f);
  std::vector<int32_t> labels(18, 0);
  image[1 * 6 + 1] = 5.f;
  labels[1 * 6 + 1] = 1;
  for (int y = 0; y < 3; ++y)
    for (int x = 3; x < 6; ++x) {
      image[y * 6 + x] = (x == 4 && y == 1) ? 4.f : 1.f;
      labels[y * 6 + x] = 2;
    }
  imflow::kernels::DeblendResult deblend;
  deblend.objects.resize(2);
  const auto flags = [&] {
    const auto catalog = imflow::kernels::measure_deblended({image.data(), 6, 3}, labels.data(), 2, deblend);
    return std::pair{catalog[0].flags & imflow::kFlagSingular, catalog[1].flags & imflow::kFlagSingular};
  };
  CHECK(flags() == std::pair{imflow::kFlagSingular, 0});  // the measured single pixel: 1/12 added
  deblend.objects[1].singular = true;
  CHECK(flags() == std::pair{imflow::kFlagSingular, imflow::kFlagSingular});
}
