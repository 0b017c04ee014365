// FLUX_AUTO with auto's `arithmetic: sextractor` (AutoParams::sextractor_arithmetic) against
// SExtractor 2.25's computeautoflux (photom.c) written out in its own terms over every pixel of a
// window: the centre, the ellipse's coefficients and each pixel's scaled radius in float32, the
// pixels with r2 <= klim2, the Kron factor (float)(2.5 r1 / v1) raised to 3.5. On sources far
// from the origin (float32 centres a few 1e-5 px off) some pixel lies on an ellipse's boundary,
// where SEP's double arithmetic, imflow's default, counts it the other way.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "imflow/kernels/aperture.hpp"

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
