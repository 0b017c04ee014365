// SExtractor's crowding flag (OBJ_CROWDED, FLAGS 1; photom.c's computeautoflux) in the photometry:
// its float arithmetic, the pixels it counts in the Kron radius's ellipse and in FLUX_AUTO's, and
// the row flags that carry it (flags_auto, the or-ed flags) while SEP's flags stay SEP's.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "imflow/kernels/photometry.hpp"

namespace k = imflow::kernels;

namespace {

constexpr int64_t kSide = 64;
constexpr double kCentre = 32.0, kSigma = 1.5;

// A Gaussian source (label 1 within 3 px) at the centre of a 64 x 64 field.
struct CrowdedField {
  std::vector<float> pixels = std::vector<float>(kSide * kSide);
  std::vector<int32_t> labels = std::vector<int32_t>(kSide * kSide, 0);
  CrowdedField() {
    for (int64_t y = 0; y < kSide; ++y) {
      for (int64_t x = 0; x < kSide; ++x) {
        const double r2 = (x - kCentre) * (x - kCentre) + (y - kCentre) * (y - kCentre);
        pixels[y * kSide + x] = static_cast<float>(100.0 * std::exp(-r2 / (2 * kSigma * kSigma)));
        if (r2 < 9.0) labels[y * kSide + x] = 1;
      }
    }
  }
  // Another object (label 2) on the pixels x0..x1, y0..y1.
  void neighbour(int64_t x0, int64_t x1, int64_t y0, int64_t y1) {
    for (int64_t y = y0; y <= y1; ++y) {
      for (int64_t x = x0; x <= x1; ++x) labels[y * kSide + x] = 2;
    }
  }
  k::ApertureImage image() const {
    k::ApertureImage out{{pixels.data(), kSide, kSide}};
    out.neighbours = labels.data();
    out.neighbour_id = 1;
    out.mirror_x = out.mirror_y = kCentre;
    return out;
  }
};

// The pixels (and other objects' among them) whose centres lie within r times the source's
// ellipse (q <= r^2 with `closed`, as the Kron radius's pixels; q < r^2 otherwise, as FLUX_AUTO's
// sum at pixel centres).
struct Count {
  int64_t pixels = 0, blanked = 0;
};
Count count(const CrowdedField& field, double r, bool closed) {
  const k::EllipseCoeffs e = k::ellipse_coeffs(kSigma, kSigma, 0.0);
  Count c;
  for (int64_t y = 0; y < kSide; ++y) {
    for (int64_t x = 0; x < kSide; ++x) {
      const double dx = static_cast<double>(x) - kCentre, dy = static_cast<double>(y) - kCentre;
      const double q = e.cxx * dx * dx + e.cyy * dy * dy + e.cxy * dx * dy;
      if (closed ? q > r * r : q >= r * r) continue;
      ++c.pixels;
      c.blanked += field.labels[y * kSide + x] == 2 ? 1 : 0;
    }
  }
  return c;
}

k::AutoFlux auto_flux(const CrowdedField& field) {
  return k::auto_flux(field.image(), kCentre, kCentre, kSigma, kSigma, 0.0);
}

}  // namespace

TEST_CASE("crowding compares as SExtractor does, in float", "[photometry]") {
  auto crowded = [](int64_t pixels, int64_t blanked, double area, double blanked_area) {
    k::KronRadius kron;
    kron.pixels = pixels;
    kron.blanked = blanked;
    k::ApertureSum sum;
    sum.area = area;
    sum.blanked_area = blanked_area;
    return k::sextractor_crowded(kron, sum);
  };
  CHECK(crowded(30, 3, 30.0, 0.0));          // (float)3 / 30 is 0.1f, above the double 0.1
  CHECK(crowded(1000, 100, 30.0, 0.0));
  CHECK_FALSE(crowded(30, 2, 30.0, 3.0));    // (float)3 > 0.1 x 30 = 3.0000000000000004: no
  CHECK(crowded(30, 2, 30.0, 4.0));
  CHECK_FALSE(crowded(29, 2, 20.0, 2.0));
  CHECK_FALSE(crowded(0, 0, 30.0, 30.0));    // no pixel in the first step: SExtractor measures nothing
}

TEST_CASE("crowding counts other objects' pixels in the Kron radius's and FLUX_AUTO's ellipses", "[photometry]") {
  const k::AutoFlux alone = auto_flux(CrowdedField());
  CHECK_FALSE(alone.crowded);
  REQUIRE(alone.kron_radius > 0.0);
  // A neighbour at the edge of the 6 a circle (9 px), ever wider: the first step's share rises.
  int flagged = 0;
  for (int64_t width = 0; width <= 8; ++width) {
    CrowdedField field;
    if (width > 0) field.neighbour(41 - width + 1, 41, 23, 41);
    const k::AutoFlux automatic = auto_flux(field);
    const Count kron = count(field, 6.0, true), sum = count(field, 2.5 * automatic.kron_radius, false);
    const bool expected = static_cast<float>(kron.blanked) / static_cast<float>(kron.pixels) > 0.1 ||
                          static_cast<float>(sum.blanked) > 0.1 * static_cast<double>(sum.pixels);
    CHECK(kron.pixels == 253);
    CHECK(automatic.crowded == expected);
    flagged += automatic.crowded ? 1 : 0;
  }
  CHECK(flagged > 0);
  CHECK(flagged < 8);
  // A small neighbour close in: under 10% of the Kron radius's pixels, over 10% of FLUX_AUTO's.
  CrowdedField near;
  near.neighbour(35, 37, 30, 34);
  const k::AutoFlux automatic = auto_flux(near);
  const Count kron = count(near, 6.0, true), sum = count(near, 2.5 * automatic.kron_radius, false);
  CHECK(kron.blanked == 15);
  CHECK(static_cast<float>(kron.blanked) / static_cast<float>(kron.pixels) < 0.1f);
  CHECK(static_cast<double>(sum.blanked) > 0.1 * static_cast<double>(sum.pixels));
  CHECK(automatic.crowded);
  CHECK((automatic.flag & k::kAutoCrowded) == 0);  // SEP's flags stay SEP's
}

TEST_CASE("the row carries crowding in flags_auto and the or-ed flags; masked pixels count", "[photometry]") {
  CrowdedField field;
  field.neighbour(35, 37, 30, 34);
  k::PhotometrySpec spec;
  spec.auto_flux = true;
  spec.apertures = 1;
  spec.aperture_diameters[0] = 4.0;
  const k::PhotometrySource source{kCentre, kCentre, kSigma, kSigma, 0.0, 1};
  std::vector<double> row(static_cast<size_t>(spec.stride()));
  const k::ApertureImage plain{{field.pixels.data(), kSide, kSide}};
  k::measure_photometry(plain, field.labels.data(), spec, source, row.data());
  CHECK(row[3] == k::kAutoCrowded);
  CHECK(row[static_cast<size_t>(spec.flags_offset())] == k::kAutoCrowded);
  spec.mask_neighbours = false;  // SExtractor's BLANK N: the neighbour's pixels are measured
  k::measure_photometry(plain, field.labels.data(), spec, source, row.data());
  CHECK(row[3] == 0.0);
  CHECK(row[static_cast<size_t>(spec.flags_offset())] == 0.0);
  // The same pixels masked (non-finite, bad weights) are bad pixels: crowded without neighbours.
  std::vector<float> mask(kSide * kSide, 0.0f);
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = field.labels[i] == 2 ? 1.0f : 0.0f;
  k::ApertureImage masked = plain;
  masked.mask = mask.data();
  k::measure_photometry(masked, field.labels.data(), spec, source, row.data());
  CHECK(row[3] == (k::kAutoCrowded | k::kAperHasMasked));
  // FLUX_RADIUS alone measures FLUX_AUTO, crowding included (as SExtractor does).
  k::PhotometrySpec radius;
  radius.fractions = 1;
  radius.flux_fractions[0] = 0.5;
  std::vector<double> radius_row(static_cast<size_t>(radius.stride()));
  k::measure_photometry(plain, field.labels.data(), radius, source, radius_row.data());
  CHECK(radius_row[static_cast<size_t>(radius.flags_offset())] == k::kAutoCrowded);
}
