// The measure step's per-source photometry (kernels::measure_photometry) on hand-made images with
// known answers: aperture sums of a constant image, a Gaussian's Kron radius, half-light radius
// and windowed centre, the minimum circle, and neighbours' pixels replaced by symmetric ones.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "imflow/kernels/photometry.hpp"

namespace k = imflow::kernels;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

constexpr double kPi = 3.14159265358979323846;

struct Field {
  int64_t w, h;
  std::vector<float> pixels;
  std::vector<int32_t> labels;
  k::ApertureImage view() const { return {{pixels.data(), w, h}}; }
};

Field gaussian(int64_t w, int64_t h, double cx, double cy, double sigma, double amp) {
  Field f{w, h, std::vector<float>(w * h), std::vector<int32_t>(w * h, 0)};
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      const double r2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
      f.pixels[y * w + x] = static_cast<float>(amp * std::exp(-r2 / (2 * sigma * sigma)));
      if (r2 < 9.0) f.labels[y * w + x] = 1;
    }
  }
  return f;
}

std::vector<double> measure(const Field& field, const k::PhotometrySpec& spec, const k::PhotometrySource& source,
                            k::ApertureImage image) {
  std::vector<double> row(spec.stride(), -1.0);
  k::measure_photometry(image, field.labels.data(), spec, source, row.data());
  return row;
}

k::PhotometrySpec everything() {
  k::PhotometrySpec spec;
  spec.auto_flux = true;
  spec.apertures = 2;
  spec.aperture_diameters[0] = 4.0;
  spec.aperture_diameters[1] = 7.5;
  spec.fractions = 2;
  spec.flux_fractions[0] = 0.5;
  spec.flux_fractions[1] = 0.9;
  spec.windowed = true;
  return spec;
}

}  // namespace

TEST_CASE("a row's layout follows the spec", "[photometry]") {
  const k::PhotometrySpec spec = everything();
  CHECK(spec.aperture_offset() == 4);
  CHECK(spec.radius_offset() == 8);
  CHECK(spec.window_offset() == 10);
  CHECK(spec.stride() == 13);
  k::PhotometrySpec apertures;
  apertures.apertures = 3;
  CHECK(apertures.aperture_offset() == 0);
  CHECK(apertures.stride() == 6);
  CHECK_FALSE(k::PhotometrySpec{}.any());
}

TEST_CASE("aperture fluxes of a constant image are area x value, errors sqrt(area) x rms", "[photometry]") {
  Field field{64, 64, std::vector<float>(64 * 64, 2.0f), std::vector<int32_t>(64 * 64, 0)};
  k::PhotometrySpec spec;
  spec.apertures = 2;
  spec.aperture_diameters[0] = 4.0;
  spec.aperture_diameters[1] = 7.5;
  k::ApertureImage image = field.view();
  image.noise_kind = k::NoiseKind::stddev;
  image.noise_value = 3.0;
  const auto row = measure(field, spec, {31.3, 30.8, 1.0, 1.0, 0.0, 1}, image);
  CHECK_THAT(row[0], WithinRel(kPi * 4.0 * 2.0, 1e-12));
  CHECK_THAT(row[1], WithinRel(std::sqrt(kPi * 4.0) * 3.0, 1e-12));
  CHECK_THAT(row[2], WithinRel(kPi * 3.75 * 3.75 * 2.0, 1e-12));
  CHECK_THAT(row[3], WithinRel(std::sqrt(kPi * 3.75 * 3.75) * 3.0, 1e-12));
  // A local background from the annulus 6..9: a flat sky leaves nothing, its noise adds in quadrature.
  spec.aperture_bkgann = true;
  spec.bkgann_rin = 6.0;
  spec.bkgann_rout = 9.0;
  const auto local = measure(field, spec, {31.3, 30.8, 1.0, 1.0, 0.0, 1}, image);
  CHECK_THAT(local[0], WithinAbs(0.0, 1e-9));
  CHECK(local[1] > row[1]);
  // The gain adds the flux's Poisson variance.
  image.gain = 4.0;
  const auto poisson = measure(field, everything(), {31.3, 30.8, 1.0, 1.0, 0.0, 1}, image);
  CHECK_THAT(poisson[5], WithinRel(std::sqrt(kPi * 4.0 * 9.0 + kPi * 4.0 * 2.0 / 4.0), 1e-12));
}

TEST_CASE("a Gaussian's Kron radius, FLUX_AUTO, half-light radius and windowed centre", "[photometry]") {
  const double sigma = 2.0, cx = 32.3, cy = 31.7, amp = 100.0;
  const Field field = gaussian(64, 64, cx, cy, sigma, amp);
  const auto row = measure(field, everything(), {cx, cy, sigma, sigma, 0.0, 1}, field.view());
  // Kron radius in units of a (= sigma): E[r] of a 2-D Gaussian, sqrt(pi / 2).
  CHECK_THAT(row[0], WithinRel(std::sqrt(kPi / 2.0), 1e-2));
  // FLUX_AUTO: the flux inside 2.5 x that radius, 1 - exp(-(2.5 R)^2 / 2) of the total.
  const double total = 2.0 * kPi * sigma * sigma * amp, inside = 1.0 - std::exp(-std::pow(2.5 * row[0], 2) / 2.0);
  CHECK_THAT(row[1], WithinRel(total * inside, 1e-2));
  CHECK(row[2] == 0.0);  // no noise, no gain
  CHECK(row[3] == 0.0);
  // The radius holding a fraction f of FLUX_AUTO: s sqrt(-2 ln(1 - f x inside)), where flux_radius
  // spreads each sample over its pixel's area (the Gaussian widened by the pixel, s^2 = sigma^2 + 1/12)
  // and interpolates linearly between 64 annuli.
  const double s = std::sqrt(sigma * sigma + 1.0 / 12.0);
  for (const auto& [f, at] : {std::pair{0.5, 8}, std::pair{0.9, 9}}) {
    CHECK_THAT(row[at], WithinRel(s * std::sqrt(-2.0 * std::log(1.0 - f * row[1] / total)), 5e-3));
  }
  // The windowed centre, iterated from a quarter pixel away, is the Gaussian's centre.
  const auto moved = measure(field, everything(), {cx + 0.2, cy - 0.15, sigma, sigma, 0.0, 1}, field.view());
  CHECK_THAT(moved[10], WithinAbs(cx, 1e-3));
  CHECK_THAT(moved[11], WithinAbs(cy, 1e-3));
  CHECK(moved[12] == 0.0);
}

TEST_CASE("a small Kron ellipse gives way to the min_radius circle", "[photometry]") {
  const Field field = gaussian(32, 32, 15.0, 16.0, 0.5, 100.0);
  k::PhotometrySpec spec;
  spec.auto_flux = true;
  spec.min_diameter = 5.0;
  const auto row = measure(field, spec, {15.0, 16.0, 0.5, 0.5, 0.0, 1}, field.view());
  REQUIRE(row[0] * 0.5 < 2.5);
  CHECK(row[1] == k::sum_circle(field.view(), 15.0, 16.0, 2.5, 1).sum);
}

TEST_CASE("neighbours' pixels are replaced by the symmetric pixels, or left out", "[photometry]") {
  const double cx = 20.0, cy = 20.0;
  const Field alone = gaussian(48, 48, cx, cy, 1.5, 50.0);
  Field crowded = alone;
  for (int64_t y = 20; y <= 21; ++y) {  // a neighbour at x 24..25, inside the 12-pixel aperture
    for (int64_t x = 24; x <= 25; ++x) {
      crowded.pixels[y * 48 + x] += 100.0f;
      crowded.labels[y * 48 + x] = 2;
    }
  }
  k::PhotometrySpec spec = everything();
  spec.aperture_diameters[1] = 12.0;
  const k::PhotometrySource source{cx, cy, 1.5, 1.5, 0.0, 1};
  const auto clean = measure(alone, spec, source, alone.view());
  const auto masked = measure(crowded, spec, source, crowded.view());
  // The apertures read the symmetric pixels (x 15..16), which hold the same Gaussian values: the
  // neighbour is gone.
  CHECK_THAT(masked[4], WithinRel(clean[4], 1e-12));
  CHECK_THAT(masked[6], WithinRel(clean[6], 1e-12));
  // The Kron radius leaves the neighbour's pixels out, as a mask would.
  std::vector<float> mask(48 * 48, 0.0f);
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = crowded.labels[i] == 2 ? 1.0f : 0.0f;
  k::ApertureImage masked_image = alone.view();
  masked_image.mask = mask.data();
  const k::EllipseCoeffs e = k::ellipse_coeffs(1.5, 1.5, 0.0);
  CHECK(masked[0] == k::kron_radius(masked_image, cx, cy, e.cxx, e.cyy, e.cxy, 6.0).radius);
  CHECK(masked[0] != clean[0]);
  spec.mask_neighbours = false;  // SEP's recipe: the neighbour's flux counts
  const auto unmasked = measure(crowded, spec, source, crowded.view());
  CHECK_THAT(unmasked[6], WithinRel(clean[6] + 400.0, 1e-6));  // 100 + the Gaussian, rounded to float
  // Where the symmetric pixel is another object's too, the pixel counts as 0.
  spec.mask_neighbours = true;
  for (int64_t y = 19; y <= 20; ++y) {
    for (int64_t x = 15; x <= 16; ++x) crowded.labels[y * 48 + x] = 3;
  }
  const auto zeroed = measure(crowded, spec, source, crowded.view());
  double symmetric = 0.0;
  for (int64_t y = 19; y <= 20; ++y) {
    for (int64_t x = 15; x <= 16; ++x) symmetric += alone.pixels[y * 48 + x];
  }
  // The third object's pixels and the neighbour's stand in for each other: all eight count 0
  // (the Gaussian's values there are the same by symmetry).
  CHECK_THAT(zeroed[6], WithinRel(clean[6] - 2.0 * symmetric, 1e-6));
}
