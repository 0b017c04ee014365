// measure's `arithmetic: sextractor` against SExtractor 2.25's photom.c written out in its own
// terms: computeautoflux over every pixel of a window (the centre, the ellipse's coefficients and
// each pixel's scaled radius in float32, the pixels with r2 <= klim2, the Kron factor
// (float)(2.5 r1 / v1) raised to 3.5), and computeaperflux (float32 offsets, 5 x 5 samples in
// float32 steps between r - 0.75 and r + 0.75, and WEIGHT_GAIN's term on every pixel within
// r + 0.75). On sources far from the origin (float32 centres a few 1e-5 px off) some pixel or
// sample lies on a boundary, where SEP's double arithmetic, imflow's default, counts it the other way.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "imflow/kernels/aperture.hpp"
#include "imflow/kernels/weight_gain.hpp"

namespace k = imflow::kernels;

namespace {

constexpr int64_t kWidth = 2048, kHeight = 64;
constexpr int kReach = 64;  // each loop's window: past 6 a and 15 a (the largest scaled Kron radius), a <= 4

struct ComputeAutoFlux {
  double flux = 0.0;
  float kronfactor = 0.0f;
};

// photom.c's two loops for an isolated object (no other object, no mask, no weight), PHOT_AUTOPARAMS
// 2.5, 3.5 and PHOT_AUTOAPERS 0, 0 (always the ellipse).
ComputeAutoFlux computeautoflux(const std::vector<float>& image, double x, double y, const k::EllipseCoeffs& e) {
  const float mx = static_cast<float>(x), my = static_cast<float>(y);
  const float cx2 = static_cast<float>(e.cxx), cy2 = static_cast<float>(e.cyy), cxy = static_cast<float>(e.cxy);
  const auto r2_at = [&](int64_t ix, int64_t iy) {
    const float dx = static_cast<float>(ix) - mx, dy = static_cast<float>(iy) - my;
    return cx2 * dx * dx + cy2 * dy * dy + cxy * dx * dy;
  };
  const int64_t x0 = static_cast<int64_t>(x) - kReach, y0 = static_cast<int64_t>(y) - kReach;
  const auto for_window = [&](auto&& visit) {
    for (int64_t iy = std::max<int64_t>(y0, 0); iy < std::min(y0 + 2 * kReach, kHeight); ++iy)
      for (int64_t ix = std::max<int64_t>(x0, 0); ix < std::min(x0 + 2 * kReach, kWidth); ++ix) visit(ix, iy);
  };
  float klim2 = 36.0f;  // KRON_NSIG^2: (3 MARGIN_SCALE)^2
  double r1 = 0.0, v1 = 0.0;
  for_window([&](int64_t ix, int64_t iy) {
    const float r2 = r2_at(ix, iy);
    if (r2 <= klim2) {
      const double pix = image[static_cast<size_t>(iy * kWidth + ix)];
      r1 += std::sqrt(static_cast<double>(r2)) * pix;
      v1 += pix;
    }
  });
  ComputeAutoFlux out;
  out.kronfactor = r1 > 0.0 && v1 > 0.0 ? static_cast<float>((2.5 * r1) / v1) : 3.5f;
  if (out.kronfactor < 3.5) out.kronfactor = 3.5f;
  klim2 = out.kronfactor * out.kronfactor;
  for_window([&](int64_t ix, int64_t iy) {
    if (r2_at(ix, iy) <= klim2) out.flux += image[static_cast<size_t>(iy * kWidth + ix)];
  });
  return out;
}

struct ComputeAperFlux {
  double flux = 0.0;
  int64_t reached = 0;  // pixels within r + 0.75 (WEIGHT_GAIN's terms)
};

// photom.c's computeaperflux for an isolated object, APER_OVERSAMP 5.
ComputeAperFlux computeaperflux(const std::vector<float>& image, double x, double y, double diameter) {
  const float mx = static_cast<float>(x), my = static_cast<float>(y);
  const float raper = static_cast<float>(diameter / 2.0), raper2 = raper * raper;
  const float rintlim = static_cast<float>(raper - 0.75);
  const float rintlim2 = rintlim > 0.0 ? rintlim * rintlim : 0.0f;
  const float rextlim2 = static_cast<float>((raper + 0.75) * (raper + 0.75));
  const float scale = static_cast<float>(1.0 / 5), scale2 = scale * scale;
  const float offset = static_cast<float>(0.5 * (scale - 1.0));
  const int64_t xmin = std::max<int64_t>(static_cast<int64_t>(mx - raper + 0.499999), 0);
  const int64_t xmax = std::min<int64_t>(static_cast<int64_t>(mx + raper + 1.499999), kWidth);
  const int64_t ymin = std::max<int64_t>(static_cast<int64_t>(my - raper + 0.499999), 0);
  const int64_t ymax = std::min<int64_t>(static_cast<int64_t>(my + raper + 1.499999), kHeight);
  ComputeAperFlux out;
  for (int64_t iy = ymin; iy < ymax; ++iy) {
    for (int64_t ix = xmin; ix < xmax; ++ix) {
      float dx = static_cast<float>(ix) - mx, dy = static_cast<float>(iy) - my;
      const float r2 = dx * dx + dy * dy;
      if (!(r2 < rextlim2)) continue;
      ++out.reached;
      float locarea = 1.0f;
      if (r2 > rintlim2) {
        dx += offset;
        dy += offset;
        locarea = 0.0f;
        for (int sy = 0; sy < 5; ++sy, dy += scale) {
          float dx1 = dx;
          const float dy2 = dy * dy;
          for (int sx = 0; sx < 5; ++sx, dx1 += scale) {
            if (dx1 * dx1 + dy2 < raper2) locarea += scale2;
          }
        }
      }
      out.flux += locarea * static_cast<double>(image[static_cast<size_t>(iy * kWidth + ix)]);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("auto with SExtractor's arithmetic counts the pixels computeautoflux counts", "[aperture][photometry]") {
  std::mt19937_64 random(20261129);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> pixels(static_cast<size_t>(kWidth * kHeight));
  for (float& p : pixels) p = 2.0f + noise(random);
  const k::ApertureImage image{{pixels.data(), kWidth, kHeight}};

  std::uniform_real_distribution<double> along(1024.0, kWidth - 1.0), across(0.0, kHeight - 1.0), axis(0.6, 4.0),
      angle(-1.5, 1.5);
  k::AutoParams sextractor;
  sextractor.min_radius = 0.0;
  sextractor.min_kron_radius = 3.5;
  sextractor.sextractor_arithmetic = true;
  k::AutoParams sep = sextractor;
  sep.sextractor_arithmetic = false;
  int equal = 0, sep_differs = 0;
  const int sources = 3000;
  for (int n = 0; n < sources; ++n) {
    const double x = along(random), y = across(random), a = axis(random), b = a * axis(random) / 4.0,
                 theta = angle(random);
    const ComputeAutoFlux expected = computeautoflux(pixels, x, y, k::ellipse_coeffs(a, b, theta));
    const k::AutoFlux ours = k::auto_flux(image, x, y, a, b, theta, sextractor);
    const bool same = ours.flux == expected.flux &&
                      static_cast<float>(ours.kron_radius * sextractor.kron_factor) == expected.kronfactor;
    if (!same) {
      UNSCOPED_INFO("x " << x << " y " << y << " a " << a << " b " << b << " theta " << theta << ": flux "
                         << ours.flux << " vs " << expected.flux << ", Kron factor "
                         << ours.kron_radius * sextractor.kron_factor << " vs " << expected.kronfactor);
    }
    equal += same ? 1 : 0;
    sep_differs += k::auto_flux(image, x, y, a, b, theta, sep).flux != expected.flux ? 1 : 0;
  }
  CHECK(equal == sources);
  CHECK(sep_differs > 0);  // the sources exercise the difference
}

TEST_CASE("apertures with SExtractor's arithmetic sample what computeaperflux samples", "[aperture][photometry]") {
  std::mt19937_64 random(20261130);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> pixels(static_cast<size_t>(kWidth * kHeight));
  for (float& p : pixels) p = 2.0f + noise(random);
  const std::vector<float> ones(pixels.size(), 1.0f), variance(pixels.size(), 2.0f);
  const k::ApertureImage image{{pixels.data(), kWidth, kHeight}};
  // WEIGHT_GAIN's term of a pixel of 1 with variance 2, gain 2 and backsig^2 4: 1 / 2 x 2 / 4.
  k::ApertureImage weighted{{ones.data(), kWidth, kHeight}};
  weighted.noise = variance.data();
  weighted.noise_kind = k::NoiseKind::variance;
  weighted.gain = 2.0;

  std::uniform_real_distribution<double> along(1024.0, kWidth - 1.0), across(0.0, kHeight - 1.0);
  int equal = 0, sep_differs = 0, terms_equal = 0;
  const int apertures = 3000;
  for (int n = 0; n < apertures; ++n) {
    const double x = along(random), y = across(random), diameter = n % 2 == 0 ? 5.0 : 10.0;
    const ComputeAperFlux expected = computeaperflux(pixels, x, y, diameter);
    const double ours = k::sum_circle_sextractor(image, x, y, diameter / 2, 5).sum;
    if (ours != expected.flux) UNSCOPED_INFO("x " << x << " y " << y << ": " << ours << " vs " << expected.flux);
    equal += ours == expected.flux ? 1 : 0;
    sep_differs += k::sum_circle(image, x, y, diameter / 2, 5).sum != expected.flux ? 1 : 0;
    terms_equal += k::weight_gain_circle(weighted, x, y, diameter / 2, 4.0, true) == 0.25 * expected.reached ? 1 : 0;
  }
  CHECK(equal == apertures);
  CHECK(terms_equal == apertures);
  CHECK(sep_differs > 0);
}
