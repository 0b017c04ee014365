// Aperture photometry kernels on hand-made images with known answers: exact overlaps that tile
// the circle and the ellipse, sums on constant images, annuli as differences, errors, masks and
// flags, a Gaussian's half-light radius, windowed centroids of symmetric sources, Kron and AUTO.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "imflow/kernels/aperture.hpp"

namespace k = imflow::kernels;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

struct TestImage {
  int64_t w, h;
  std::vector<float> pixels;
  k::ApertureImage view() const { return {{pixels.data(), w, h}}; }
};

TestImage constant(int64_t w, int64_t h, float value) { return {w, h, std::vector<float>(w * h, value)}; }

TestImage gaussian(int64_t w, int64_t h, double cx, double cy, double sigma, double amp) {
  TestImage im{w, h, std::vector<float>(w * h)};
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      const double r2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
      im.pixels[y * w + x] = static_cast<float>(amp * std::exp(-r2 / (2 * sigma * sigma)));
    }
  }
  return im;
}

}  // namespace

TEST_CASE("exact overlaps of pixels with circles and ellipses", "[aperture]") {
  CHECK_THAT(k::circle_overlap(0, 0, 1, 1, 1.0), WithinAbs(std::numbers::pi / 4, 1e-14));
  CHECK(k::circle_overlap(0, 0, 1, 1, 2.0) == 1.0);
  CHECK(k::circle_overlap(2, 2, 3, 3, 1.0) == 0.0);
  CHECK_THAT(k::circle_overlap(-1, -1, 1, 1, 1.0), WithinAbs(std::numbers::pi, 1e-14));
  CHECK_THAT(k::ellipse_overlap(0, 0, 2, 1, 2.0, 1.0, 0.0), WithinAbs(std::numbers::pi / 2, 1e-13));
  CHECK_THAT(k::ellipse_overlap(0, 0, 1, 2, 2.0, 1.0, std::numbers::pi / 2), WithinAbs(std::numbers::pi / 2, 1e-13));
  CHECK_THAT(k::ellipse_overlap(-5, -5, 5, 5, 2.0, 1.0, 0.7), WithinAbs(2 * std::numbers::pi, 1e-13));
  // The pixels' overlaps tile the aperture: they add up to its area wherever it is centred.
  for (const double r : {0.3, 1.0, 2.7, 7.45}) {
    for (const double cx : {0.0, 0.5, 0.27, -0.43}) {
      const double cy = 0.31 - cx;
      double circle = 0.0, ellipse = 0.0, round_ellipse = 0.0;
      for (int iy = -12; iy <= 12; ++iy) {
        for (int ix = -12; ix <= 12; ++ix) {
          const double dx = ix - cx, dy = iy - cy;
          const double c = k::circle_overlap(dx - 0.5, dy - 0.5, dx + 0.5, dy + 0.5, r);
          const double e = k::ellipse_overlap(dx - 0.5, dy - 0.5, dx + 0.5, dy + 0.5, r, r * 0.6, 0.4);
          const double round = k::ellipse_overlap(dx - 0.5, dy - 0.5, dx + 0.5, dy + 0.5, r, r, -1.1);
          REQUIRE(c >= 0.0);
          REQUIRE(c <= 1.0 + 1e-14);
          REQUIRE_THAT(round, WithinAbs(c, 1e-12));
          circle += c;
          ellipse += e;
          round_ellipse += round;
        }
      }
      CHECK_THAT(circle, WithinRel(std::numbers::pi * r * r, 1e-12));
      CHECK_THAT(ellipse, WithinRel(std::numbers::pi * r * r * 0.6, 1e-12));
    }
  }
}

TEST_CASE("subsampled overlaps equal SEP's loop of additions", "[aperture]") {
  // SEP's loop: the subpixel centres by repeated additions, the area by one addition per point.
  auto sep_loop = [](double dx, double dy, int subpix, auto inside) {
    const double scale = 1.0 / subpix, scale2 = scale * scale, offset = 0.5 * (scale - 1.0);
    double overlap = 0.0, sy = dy + offset;
    for (int j = 0; j < subpix; ++j, sy += scale) {
      double sx = dx + offset;
      for (int i = 0; i < subpix; ++i, sx += scale)
        if (inside(sx, sy, sy * sy)) overlap += scale2;
    }
    return overlap;
  };
  const double r = 4.3, cxx = 0.9, cyy = 0.35, cxy = 0.41;
  auto circle = [r](double sx, double, double sy2) { return sx * sx + sy2 < r * r; };
  auto ellipse = [&](double sx, double sy, double sy2) { return cxx * sx * sx + cyy * sy2 + cxy * sx * sy < r * r; };
  int cut = 0;
  for (const int subpix : {1, 2, 5, 11, 32, 33, 40}) {  // 33 and 40: past the host's cached x row
    for (double dy = -5.6; dy < 5.6; dy += 0.37) {
      for (double dx = -5.9; dx < 5.9; dx += 0.41) {
        const double c = k::subsampled_overlap(dx, dy, subpix, circle);
        const double e = k::subsampled_overlap(dx, dy, subpix, ellipse);
        INFO("subpix " << subpix << " at " << dx << ", " << dy);
        REQUIRE(c == sep_loop(dx, dy, subpix, circle));
        REQUIRE(e == sep_loop(dx, dy, subpix, ellipse));
        cut += c > 0.0 && c < 1.0;
      }
    }
  }
  CHECK(cut > 100);  // many pixels straddle the boundaries
}

TEST_CASE("sums on a constant image: areas, annuli, errors and the Poisson term", "[aperture]") {
  const TestImage im = constant(64, 64, 3.0f);
  auto image = im.view();
  for (const double r : {0.8, 2.5, 5.3, 11.0}) {
    const auto s = k::sum_circle(image, 31.37, 30.81, r, 0);
    CHECK_THAT(s.sum, WithinRel(3.0 * std::numbers::pi * r * r, 1e-12));
    CHECK_THAT(s.area, WithinRel(std::numbers::pi * r * r, 1e-12));
    CHECK(s.error == 0.0);
    CHECK(s.flag == 0);
    // Subsampling approximates the area to about a subpixel per boundary pixel.
    const auto sub = k::sum_circle(image, 31.37, 30.81, r, 5);
    CHECK_THAT(sub.sum, WithinRel(s.sum, 0.25 / r / r + 0.01));
    const auto e = k::sum_ellipse(image, 31.37, 30.81, 2.0, 1.2, -0.6, r, 0);
    CHECK_THAT(e.sum, WithinRel(3.0 * std::numbers::pi * 2.4 * r * r, 1e-12));
  }
  const auto outer = k::sum_circle(image, 30.2, 33.9, 9.0, 0), inner = k::sum_circle(image, 30.2, 33.9, 4.5, 0);
  const auto ring = k::sum_circann(image, 30.2, 33.9, 4.5, 9.0, 0);
  CHECK_THAT(ring.sum, WithinRel(outer.sum - inner.sum, 1e-12));
  CHECK_THAT(ring.sum, WithinRel(3.0 * std::numbers::pi * (81.0 - 20.25), 1e-12));
  const auto ering = k::sum_ellipann(image, 30.2, 33.9, 1.5, 1.0, 0.3, 2.0, 5.0, 0);
  CHECK_THAT(ering.sum, WithinRel(3.0 * std::numbers::pi * 1.5 * (25.0 - 4.0), 1e-12));
  // A local background annulus of the same constant leaves nothing.
  CHECK_THAT(k::sum_circle_bkgann(image, 30.2, 33.9, 4.0, 6.0, 9.0, 0).sum, WithinAbs(0.0, 1e-9));

  k::ApertureImage noisy = image;
  noisy.noise_kind = k::NoiseKind::stddev;
  noisy.noise_value = 2.0;
  const auto with_err = k::sum_circle(noisy, 31.0, 31.0, 4.0, 0);
  CHECK_THAT(with_err.error, WithinRel(std::sqrt(4.0 * std::numbers::pi * 16.0), 1e-12));
  noisy.noise_kind = k::NoiseKind::variance;
  noisy.noise_value = 4.0;
  noisy.gain = 2.0;
  const auto with_gain = k::sum_circle(noisy, 31.0, 31.0, 4.0, 0);
  CHECK_THAT(with_gain.error,
             WithinRel(std::sqrt(4.0 * std::numbers::pi * 16.0 + 3.0 * std::numbers::pi * 16.0 / 2.0), 1e-12));
  // Invalid parameters give NaN, as SEP raises.
  CHECK(std::isnan(k::sum_circle(image, 3, 3, -1.0).sum));
  CHECK(std::isnan(k::sum_ellipse(image, 3, 3, 1.0, 2.0, 0.0, 1.0).sum));
}

TEST_CASE("masks, truncation and their flags", "[aperture]") {
  TestImage im = constant(40, 40, 2.0f);
  std::vector<float> mask(40 * 40, 0.0f);
  for (int64_t x = 0; x < 20; ++x) mask[20 * 40 + x] = 1.0f;  // row 20, left half
  im.pixels[20 * 40 + 18] = 1000.0f;                           // hidden under the mask
  k::ApertureImage image = im.view();
  image.mask = mask.data();
  const auto s = k::sum_circle(image, 20.0, 20.0, 5.0, 0);
  CHECK(s.flag == k::kAperHasMasked);
  CHECK_THAT(s.sum, WithinRel(2.0 * std::numbers::pi * 25.0, 1e-12));  // masked pixels take the mean value
  image.mask_threshold = 1.0;                             // mask > threshold: nothing masked now
  CHECK(k::sum_circle(image, 20.0, 20.0, 5.0, 0).flag == 0);
  image.mask_threshold = 0.0;
  const auto ignored = k::sum_circle(image, 20.0, 20.0, 5.0, 0, k::MaskMode::ignore);
  CHECK(ignored.area < s.area - 2.0);
  CHECK_THAT(ignored.sum, WithinRel(2.0 * ignored.area, 1e-12));

  const auto edge = k::sum_circle(image, 1.0, 30.0, 3.0, 0);
  CHECK(edge.flag == k::kAperTrunc);
  // SEP's box bounds truncate toward zero: a box starting at -0.4 + 0.5 is not a truncation.
  CHECK(k::sum_circle(image, 2.0, 30.0, 2.9, 0).flag == 0);
  CHECK(k::sum_circle(image, 2.0, 30.0, 3.6, 0).flag == k::kAperTrunc);

  const auto kron_all = k::kron_radius(image, 5.0, 20.0, 1.0, 1.0, 0.0, 0.5);
  CHECK(kron_all.flag == (k::kAperHasMasked | k::kAperAllMasked));
  CHECK(kron_all.radius == 0.0);
  const TestImage negative = constant(20, 20, -1.0f);
  const auto kron_neg = k::kron_radius(negative.view(), 10.0, 10.0, 1.0, 1.0, 0.0, 6.0);
  CHECK(kron_neg.flag == k::kAperNonPositive);
  CHECK(kron_neg.radius == 0.0);
}

TEST_CASE("Kron radius, half-light radius and windowed position of known profiles", "[aperture]") {
  // A flat disc: the mean (scaled) distance of the pixel centres within 6 is about 2 x 6 / 3.
  const TestImage flat = constant(80, 80, 1.0f);
  CHECK_THAT(k::kron_radius(flat.view(), 40.0, 40.0, 1.0 / 16, 1.0 / 16, 0.0, 6.0).radius, WithinRel(4.0, 0.01));
  // A Gaussian: Kron radius sigma sqrt(pi / 2) (its first moment), half-light radius
  // sigma sqrt(2 ln 2), 90% radius sigma sqrt(2 ln 10).
  const double sigma = 3.0;
  const TestImage g = gaussian(121, 121, 60.0, 60.0, sigma, 100.0);
  const auto kron = k::kron_radius(g.view(), 60.0, 60.0, 1.0 / (sigma * sigma), 1.0 / (sigma * sigma), 0.0, 6.0);
  CHECK_THAT(kron.radius, WithinRel(std::sqrt(std::numbers::pi / 2), 0.01));
  const double fractions[] = {0.5, 0.9};
  double radii[2];
  const double total = 2 * std::numbers::pi * sigma * sigma * 100.0;
  CHECK(k::flux_radius(g.view(), 60.0, 60.0, 30.0, fractions, total, 5, radii) == 0);
  CHECK_THAT(radii[0], WithinRel(sigma * std::sqrt(2 * std::log(2.0)), 0.01));
  CHECK_THAT(radii[1], WithinRel(sigma * std::sqrt(2 * std::log(10.0)), 0.01));
  // Without normflux, the fractions are of the sum within rmax (all of it here).
  double own[2];
  k::flux_radius(g.view(), 60.0, 60.0, 30.0, fractions, std::nan(""), 5, own);
  CHECK_THAT(own[0], WithinRel(radii[0], 0.01));

  // A symmetric source: the windowed centroid converges to its centre from a start 1.5 px off.
  const auto centred = k::winpos(g.view(), 61.2, 58.9, 2.0 / 2.35 * radii[0]);
  CHECK_THAT(centred.x, WithinAbs(60.0, 1e-4));
  CHECK_THAT(centred.y, WithinAbs(60.0, 1e-4));
  CHECK(centred.iterations > 1);
  CHECK(centred.iterations <= 16);
  const TestImage off = gaussian(121, 121, 59.3, 61.7, sigma, 100.0);
  const auto exact = k::winpos(off.view(), 58.5, 62.4, 2.0 / 2.35 * radii[0], 0);
  CHECK_THAT(exact.x, WithinAbs(59.3, 1e-3));
  CHECK_THAT(exact.y, WithinAbs(61.7, 1e-3));

  // AUTO: the ellipse at 2.5 Kron radii holds nearly all of a Gaussian's flux...
  const auto big = k::auto_flux(g.view(), 60.0, 60.0, sigma, sigma, 0.0);
  CHECK_FALSE(big.circular);
  CHECK_THAT(big.flux, WithinRel(total * (1 - std::exp(-0.5 * 6.25 * std::numbers::pi / 2)), 0.02));
  // ... and a point-like source falls back to the circle of radius 1.75.
  const TestImage point = gaussian(41, 41, 20.0, 20.0, 0.4, 100.0);
  const auto small = k::auto_flux(point.view(), 20.0, 20.0, 0.4, 0.4, 0.0);
  CHECK(small.circular);
  CHECK(small.flux == k::sum_circle(point.view(), 20.0, 20.0, 1.75, 1).sum);
}

TEST_CASE("a masked pixel of infinite variance adds nothing to the windowed error", "[aperture]") {
  const TestImage g = gaussian(40, 40, 20.3, 19.6, 2.0, 100.0);
  std::vector<float> variance(40 * 40, 4.0f), mask(40 * 40, 0.0f);
  mask[20 * 40 + 23] = 1.0f;  // inside the window (radius 4 sig = 6.8)
  k::ApertureImage image = g.view();
  image.noise = variance.data();
  image.noise_kind = k::NoiseKind::variance;
  image.mask = mask.data();
  variance[20 * 40 + 23] = 0.0f;
  const auto zero = k::winpos(image, 20.0, 20.0, 1.7);
  variance[20 * 40 + 23] = std::numeric_limits<float>::infinity();  // a weight map's bad pixel
  const auto bad = k::winpos(image, 20.0, 20.0, 1.7);
  CHECK(bad.flag == k::kAperHasMasked);
  CHECK(std::isfinite(bad.flux_var));
  CHECK(bad.flux_var == zero.flux_var);
  CHECK(bad.errx2 == zero.errx2);
  variance[20 * 40 + 23] = 4.0f;  // a finite variance still counts
  CHECK(k::winpos(image, 20.0, 20.0, 1.7).flux_var > zero.flux_var);
}
