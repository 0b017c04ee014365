// The measure step's per-source photometry (kernels::measure_photometry) on hand-made images with
// known answers: aperture sums of a constant image, a Gaussian's Kron radius, half-light radius
// and windowed centre, the minimum circle, and neighbours' pixels replaced by symmetric ones;
// SExtractor's windowed errors and FLAGS_WIN, its minimum Kron radius and VIGNET stamps.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "imflow/kernels/photometry.hpp"

namespace k = imflow::kernels;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

struct Field {
  int64_t w, h;
  std::vector<float> pixels;
  std::vector<int32_t> labels;
  k::ApertureImage view() const { return {{pixels.data(), w, h}}; }
};

Field gaussian_field(int64_t w, int64_t h, double cx, double cy, double sigma, double amp) {
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
  CHECK(spec.flags_offset() == 10 + k::kWindowValues);
  CHECK(spec.stride() == 11 + k::kWindowValues);
  CHECK(k::kWindowValues == 15);
  k::PhotometrySpec apertures;
  apertures.apertures = 3;
  CHECK(apertures.aperture_offset() == 0);
  CHECK(apertures.stride() == 7);  // and the flags of all measurements
  CHECK_FALSE(k::PhotometrySpec{}.any());
  k::PhotometrySpec stamps;
  stamps.vignet_width = 5;
  stamps.vignet_height = 3;
  CHECK(stamps.any());
  CHECK(stamps.stride() == 0);  // a vignet is not in the row
  CHECK(stamps.vignet_size() == 15);
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
  CHECK_THAT(row[0], WithinRel(std::numbers::pi * 4.0 * 2.0, 1e-12));
  CHECK_THAT(row[1], WithinRel(std::sqrt(std::numbers::pi * 4.0) * 3.0, 1e-12));
  CHECK_THAT(row[2], WithinRel(std::numbers::pi * 3.75 * 3.75 * 2.0, 1e-12));
  CHECK_THAT(row[3], WithinRel(std::sqrt(std::numbers::pi * 3.75 * 3.75) * 3.0, 1e-12));
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
  CHECK_THAT(poisson[5], WithinRel(std::sqrt(std::numbers::pi * 4.0 * 9.0 + std::numbers::pi * 4.0 * 2.0 / 4.0), 1e-12));
}

TEST_CASE("a Gaussian's Kron radius, FLUX_AUTO, half-light radius and windowed centre", "[photometry]") {
  const double sigma = 2.0, cx = 32.3, cy = 31.7, amp = 100.0;
  const Field field = gaussian_field(64, 64, cx, cy, sigma, amp);
  const auto row = measure(field, everything(), {cx, cy, sigma, sigma, 0.0, 1}, field.view());
  // Kron radius in units of a (= sigma): E[r] of a 2-D Gaussian, sqrt(pi / 2).
  CHECK_THAT(row[0], WithinRel(std::sqrt(std::numbers::pi / 2.0), 1e-2));
  // FLUX_AUTO: the flux inside 2.5 x that radius, 1 - exp(-(2.5 R)^2 / 2) of the total.
  const double total = 2.0 * std::numbers::pi * sigma * sigma * amp,
               inside = 1.0 - std::exp(-std::pow(2.5 * row[0], 2) / 2.0);
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
  const Field field = gaussian_field(32, 32, 15.0, 16.0, 0.5, 100.0);
  k::PhotometrySpec spec;
  spec.auto_flux = true;
  spec.min_diameter = 5.0;
  const auto row = measure(field, spec, {15.0, 16.0, 0.5, 0.5, 0.0, 1}, field.view());
  REQUIRE(row[0] * 0.5 < 2.5);
  CHECK(row[1] == k::sum_circle(field.view(), 15.0, 16.0, 2.5, 1).sum);
}

TEST_CASE("neighbours' pixels are replaced by the symmetric pixels, or left out", "[photometry]") {
  const double cx = 20.0, cy = 20.0;
  const Field alone = gaussian_field(48, 48, cx, cy, 1.5, 50.0);
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

TEST_CASE("windowed flux, moments and position errors follow SExtractor's sums", "[photometry]") {
  const double sigma = 1.8, cx = 30.4, cy = 29.6, amp = 80.0, rms = 2.0, gain = 4.0;
  const Field field = gaussian_field(64, 64, cx, cy, sigma, amp);
  k::PhotometrySpec spec;
  spec.windowed = true;
  k::ApertureImage image = field.view();
  image.noise_kind = k::NoiseKind::stddev;
  image.noise_value = rms;
  image.gain = gain;
  k::PhotometrySource source{cx, cy, sigma, sigma, 0.0, 1};
  const auto row = measure(field, spec, source, image);
  const double xwin = row[k::kWinX], ywin = row[k::kWinY];
  REQUIRE_THAT(xwin, WithinAbs(cx, 1e-4));
  // The same sums over whole pixels (the window's 4 sig edge, where SExtractor subsamples, weighs
  // exp(-8)), with the window sig = 2 / 2.35 x the half-light radius that measure used.
  double flux = 0.0, var = 0.0, exx = 0.0, eyy = 0.0, exy = 0.0;
  k::PhotometrySpec radius_spec;
  radius_spec.fractions = 1;
  radius_spec.flux_fractions[0] = 0.5;
  const double half = measure(field, radius_spec, source, image)[0];
  const double s = 2.0 / 2.35 * half, r2max = 16.0 * s * s;
  for (int64_t y = 0; y < 64; ++y) {
    for (int64_t x = 0; x < 64; ++x) {
      // About the position before the last step, which moved it by less than 1e-4 px.
      const double dx = x - xwin, dy = y - ywin, r2 = dx * dx + dy * dy;
      if (r2 >= r2max) continue;
      const double w = std::exp(-r2 / (2.0 * s * s)), pix = field.pixels[y * 64 + x];
      const double e = w * w * (rms * rms + pix / gain);
      flux += w * pix;
      var += e;
      exx += e * (dx * dx + 0.0833);
      eyy += e * (dy * dy + 0.0833);
      exy += e * dx * dy;
    }
  }
  CHECK_THAT(row[k::kWinFlux], WithinRel(flux, 2e-3));
  CHECK_THAT(row[k::kWinFluxErr], WithinRel(std::sqrt(var), 2e-3));
  CHECK_THAT(row[k::kWinSnr], WithinRel(flux / std::sqrt(var), 4e-3));
  CHECK_THAT(row[k::kWinErrX2], WithinRel(4.0 * exx / (flux * flux), 5e-3));
  CHECK_THAT(row[k::kWinErrY2], WithinRel(4.0 * eyy / (flux * flux), 5e-3));
  CHECK_THAT(row[k::kWinErrXY], WithinAbs(4.0 * exy / (flux * flux), 1e-3 * row[k::kWinErrX2]));
  // A round source: the error ellipse is a circle of the variances' root.
  CHECK_THAT(row[k::kWinErrA], WithinRel(std::sqrt(row[k::kWinErrX2]), 1e-2));
  CHECK_THAT(row[k::kWinErrB], WithinRel(std::sqrt(row[k::kWinErrY2]), 1e-2));
  // The windowed second moments of a Gaussian (sampled at pixel centres) under a Gaussian window.
  const double windowed = 1.0 / (1.0 / (sigma * sigma) + 1.0 / (s * s));
  CHECK_THAT(row[k::kWinX2], WithinRel(windowed, 2e-2));
  CHECK_THAT(row[k::kWinY2], WithinRel(windowed, 2e-2));
  CHECK(row[k::kWinFlags] == 0.0);
}

TEST_CASE("FLAGS_WIN set: the windowed errors and moments are the isophotal ones", "[photometry]") {
  Field field = gaussian_field(48, 48, 24.0, 24.0, 1.5, 50.0);
  for (float& pixel : field.pixels) pixel = -pixel;  // no positive windowed flux
  k::PhotometrySpec spec;
  spec.windowed = true;
  k::PhotometrySource source{24.0, 24.0, 1.5, 1.5, 0.0, 1};
  source.x2 = 2.25, source.y2 = 2.0, source.xy = 0.1;
  source.errx2 = 0.04, source.erry2 = 0.01, source.errxy = 0.0;
  const auto row = measure(field, spec, source, field.view());
  CHECK((static_cast<int>(row[k::kWinFlags]) & 4) != 0);
  CHECK(row[k::kWinX2] == 2.25);
  CHECK(row[k::kWinXY] == 0.1);
  CHECK(row[k::kWinErrX2] == 0.04);
  CHECK_THAT(row[k::kWinErrA], WithinRel(0.2, 1e-12));
  CHECK_THAT(row[k::kWinErrB], WithinRel(0.1, 1e-12));
  CHECK(row[k::kWinErrTheta] == 0.0);
}

TEST_CASE("min_kron_radius raises a small Kron radius to SExtractor's minimum", "[photometry]") {
  const double sigma = 2.0, cx = 32.3, cy = 31.7;
  const Field field = gaussian_field(64, 64, cx, cy, sigma, 100.0);
  k::PhotometrySpec spec;
  spec.auto_flux = true;
  spec.min_diameter = 0.0;
  const k::PhotometrySource source{cx, cy, sigma, sigma, 0.0, 1};
  const auto sep = measure(field, spec, source, field.view());
  REQUIRE(2.5 * sep[0] < 3.5);  // a Gaussian's sqrt(pi / 2) x 2.5 = 3.13
  spec.min_kron_radius = 3.5;
  const auto raised = measure(field, spec, source, field.view());
  CHECK_THAT(raised[0], WithinRel(3.5 / 2.5, 1e-12));
  CHECK(raised[1] == k::sum_ellipse(field.view(), cx, cy, sigma, sigma, 0.0, 3.5, 1).sum);
  spec.min_kron_radius = 3.0;  // below 2.5 r_k: no change
  CHECK(measure(field, spec, source, field.view())[0] == sep[0]);
}

TEST_CASE("VIGNET stamps: SExtractor's centre pixel, -1e30 outside the image and on other objects", "[photometry]") {
  Field field{20, 10, std::vector<float>(200), std::vector<int32_t>(200, 0)};
  for (int64_t i = 0; i < 200; ++i) field.pixels[i] = static_cast<float>(i);
  field.labels[4 * 20 + 3] = 7;  // another object's pixel
  field.labels[5 * 20 + 2] = 1;  // the source's own
  std::vector<float> stamp(5 * 4);
  // (int)(x + 0.49999): x = 2.5 gives column 2, y = 4.6 row 5; the stamp starts 2 columns and 2
  // rows before it (width / 2, height / 2).
  k::copy_vignet(field.view(), field.labels.data(), 1, 2.5, 4.6, 5, 4, stamp.data());
  CHECK(stamp[2 * 5 + 2] == field.pixels[5 * 20 + 2]);
  CHECK(stamp[0 * 5 + 0] == field.pixels[3 * 20 + 0]);
  CHECK(stamp[3 * 5 + 4] == field.pixels[6 * 20 + 4]);
  CHECK(stamp[1 * 5 + 3] == -1e30f);  // row 4, column 3: the other object's
  CHECK(stamp[1 * 5 + 2] == field.pixels[4 * 20 + 2]);
  k::copy_vignet(field.view(), nullptr, 1, 2.5, 4.6, 5, 4, stamp.data());  // no blanking
  CHECK(stamp[1 * 5 + 3] == field.pixels[4 * 20 + 3]);
  // At the corner: the columns and rows before the image are -1e30.
  k::copy_vignet(field.view(), nullptr, 1, 0.2, 0.3, 5, 4, stamp.data());
  CHECK(stamp[0] == -1e30f);
  CHECK(stamp[1 * 5 + 1] == -1e30f);
  CHECK(stamp[2 * 5 + 2] == field.pixels[0]);
  CHECK(stamp[3 * 5 + 4] == field.pixels[1 * 20 + 2]);
  // Masked pixels, and a centre outside the image (all -1e30).
  std::vector<float> mask(200, 0.0f);
  mask[0] = 1.0f;
  k::ApertureImage masked = field.view();
  masked.mask = mask.data();
  k::copy_vignet(masked, nullptr, 1, 0.2, 0.3, 5, 4, stamp.data());
  CHECK(stamp[2 * 5 + 2] == -1e30f);
  k::copy_vignet(field.view(), nullptr, 1, 25.0, 3.0, 5, 4, stamp.data());
  for (float value : stamp) CHECK(value == -1e30f);
  // Through measure_photometry, with the spec's size.
  k::PhotometrySpec spec;
  spec.vignet_width = 5;
  spec.vignet_height = 4;
  std::vector<float> through(20, 0.0f);
  k::measure_photometry(field.view(), field.labels.data(), spec, {2.5, 4.6, 1.0, 1.0, 0.0, 1}, nullptr, through.data());
  CHECK(through[1 * 5 + 3] == -1e30f);
  CHECK(through[2 * 5 + 2] == field.pixels[5 * 20 + 2]);
}

TEST_CASE("the row's last value or-s every measurement's aperture flags", "[photometry]") {
  const Field field = gaussian_field(48, 48, 6.0, 24.0, 1.5, 50.0);  // 6 px from the left edge
  k::PhotometrySpec spec;
  spec.apertures = 1;
  spec.aperture_diameters[0] = 6.0;
  const k::PhotometrySource source{6.0, 24.0, 1.5, 1.5, 0.0, 1};
  CHECK(measure(field, spec, source, field.view())[spec.flags_offset()] == 0.0);  // the circle fits
  spec.fractions = 1;  // flux_radius reads out to 6 a + 1.5 = 10.5 px: cut by the edge
  spec.flux_fractions[0] = 0.5;
  CHECK(measure(field, spec, source, field.view())[spec.flags_offset()] == k::kAperTrunc);
  spec.aperture_subpix = 5;  // SExtractor's sampling of the circle's boundary pixels
  const auto sampled = measure(field, spec, source, field.view());
  CHECK(sampled[0] == k::sum_circle(field.view(), 6.0, 24.0, 3.0, 5).sum);
  CHECK(sampled[0] != k::sum_circle(field.view(), 6.0, 24.0, 3.0, 0).sum);
}

TEST_CASE("without an ellipse the circular apertures are still measured; without a centre nothing", "[photometry]") {
  Field field{64, 64, std::vector<float>(64 * 64, 2.0f), std::vector<int32_t>(64 * 64, 0)};
  const k::PhotometrySpec spec = everything();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Moments still indefinite after the singular term (b NaN): a centre, no ellipse.
  const auto row = measure(field, spec, {31.3, 30.8, 1.2, nan, 0.3, 1}, field.view());
  CHECK_THAT(row[spec.aperture_offset()], WithinRel(std::numbers::pi * 4.0 * 2.0, 1e-12));
  CHECK_THAT(row[spec.aperture_offset() + 2], WithinRel(std::numbers::pi * 3.75 * 3.75 * 2.0, 1e-12));
  for (int v = 0; v < 3; ++v) CHECK(std::isnan(row[spec.auto_offset() + v]));  // Kron radius, FLUX_AUTO, its error
  CHECK(row[spec.auto_offset() + 3] == 0.0);                                    // FLAGS_AUTO
  CHECK(std::isnan(row[spec.radius_offset()]));
  CHECK(std::isnan(row[spec.window_offset()]));
  CHECK(row[spec.window_offset() + k::kWinFlags] == 4.0);  // FLAGS_WIN 4: no window (LDAC's XWIN is X_IMAGE)
  CHECK(row[spec.flags_offset()] == 0.0);
  // No centre: every value NaN, the flags 0 but FLAGS_WIN's 4.
  const auto none = measure(field, spec, {nan, 30.8, 1.2, 1.0, 0.3, 1}, field.view());
  CHECK(std::isnan(none[spec.aperture_offset()]));
  CHECK(none[spec.flags_offset()] == 0.0);
}
