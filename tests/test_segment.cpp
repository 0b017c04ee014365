// Threshold masks on the CPU: the vectorised float32 comparisons give exactly the reference
// comparisons (float64 for `threshold_mask`, SEP's float32 arithmetic for `sep_threshold_mask`),
// around the threshold, at the float range's ends and for NaN and infinite pixels.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "imflow/kernels/segment.hpp"
#include "imflow/kernels/segment_sep.hpp"

namespace {
constexpr float kFloatInfinity = std::numeric_limits<float>::infinity();
constexpr float kFloatMax = std::numeric_limits<float>::max();

// Pixels that straddle `threshold`: the floats nearest to it and a few ulps away, the float
// range's ends, zeros, subnormals, NaN, infinities, and noise around it.
std::vector<float> straddling_pixels(double threshold, std::mt19937& random) {
  std::vector<float> pixels = {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(), -kFloatMax, kFloatMax,
                               std::numeric_limits<float>::quiet_NaN(), kFloatInfinity, -kFloatInfinity};
  if (std::isfinite(threshold) && std::fabs(threshold) <= kFloatMax) {
    float near = static_cast<float>(threshold);
    for (int step = 0; step < 4; ++step) near = std::nextafter(near, -kFloatInfinity);
    for (int step = 0; step < 9; ++step, near = std::nextafter(near, kFloatInfinity)) pixels.push_back(near);
  }
  std::normal_distribution<double> noise(std::isfinite(threshold) ? threshold : 0.0, 3.0);
  while (pixels.size() % 64 != 37) pixels.push_back(static_cast<float>(noise(random)));  // a vector tail too
  return pixels;
}
}  // namespace

TEST_CASE("float_threshold_below: (double)v > t exactly when v > the float below t", "[segment]") {
  std::mt19937 random(7);
  std::vector<double> thresholds = {0.0,   -0.0,      1.0,  0.1,   -0.1,  1e-45, -1e-45, 3.4028234663852886e38,
                                    1e300, -1e300,    1e39, -1e39, kFloatInfinity,  -kFloatInfinity, 16777217.0, -16777217.0,
                                    std::numeric_limits<double>::quiet_NaN()};
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-150, 130);
  for (int i = 0; i < 2000; ++i) thresholds.push_back(std::ldexp(mantissa(random), exponent(random)));
  for (const double threshold : thresholds) {
    const float below = imflow::kernels::float_threshold_below(threshold);
    for (const float v : straddling_pixels(threshold, random)) {
      INFO("threshold " << threshold << " pixel " << v);
      CHECK((static_cast<double>(v) > threshold) == (v > below));
    }
  }
}

TEST_CASE("threshold_mask sets finite pixels above the float64 threshold", "[segment]") {
  std::mt19937 random(11);
  for (const double threshold : {100.25, 100.1, -3.3, 0.0, 1e-40, 1e39, -1e39}) {
    const std::vector<float> pixels = straddling_pixels(threshold, random);
    const int64_t width = 37, height = static_cast<int64_t>(pixels.size()) / width;
    const imflow::ConstImageView image{pixels.data(), width, height};
    std::vector<uint8_t> mask(pixels.size(), 7);
    const int64_t count = imflow::kernels::threshold_mask(image, threshold, mask.data());
    int64_t expected_count = 0;
    for (int64_t i = 0; i < width * height; ++i) {
      const float v = pixels[static_cast<size_t>(i)];
      const uint8_t expected = std::isfinite(v) && static_cast<double>(v) > threshold;
      INFO("threshold " << threshold << " pixel " << v);
      CHECK(mask[static_cast<size_t>(i)] == expected);
      expected_count += expected;
    }
    CHECK(count == expected_count);
    CHECK((count > 0) == (threshold < kFloatMax));
  }
}

TEST_CASE("sep_threshold_mask: float32 value > nsigma x rms with maps or levels", "[segment]") {
  std::mt19937 random(13);
  const int64_t width = 101, height = 9;
  const size_t n = static_cast<size_t>(width * height);
  std::normal_distribution<float> sky(200.0f, 4.0f), level(200.0f, 0.5f), noise(4.0f, 0.3f);
  std::vector<float> pixels(n), back(n), rms(n);
  for (size_t i = 0; i < n; ++i) {
    back[i] = level(random);
    rms[i] = noise(random);
    pixels[i] = sky(random);
  }
  // Pixels on the threshold to the ulp, with either map.
  for (size_t i = 0; i < n; i += 7) pixels[i] = 200.0f + 1.5f * 4.0f;
  for (size_t i = 3; i < n; i += 11) pixels[i] = (i % 2 ? -1.0f : 1.0f) * std::numeric_limits<float>::quiet_NaN();
  pixels[5] = kFloatInfinity;
  pixels[6] = -kFloatInfinity;
  pixels[n - 1] = kFloatMax;
  for (const bool back_map : {false, true}) {
    for (const bool rms_map : {false, true}) {
      imflow::kernels::SepDetection detection;
      detection.back = back_map ? back.data() : nullptr;
      detection.back_level = 200.0f;
      detection.rms = rms_map ? rms.data() : nullptr;
      detection.rms_level = 4.0f;
      detection.nsigma = 1.5f;
      std::vector<uint8_t> mask(n, 7);
      const int64_t count =
          imflow::kernels::sep_threshold_mask({pixels.data(), width, height}, detection, mask.data());
      int64_t expected_count = 0;
      for (size_t i = 0; i < n; ++i) {
        const float value = pixels[i] - (back_map ? back[i] : 200.0f);
        const float limit = rms_map ? 1.5f * rms[i] : 1.5f * 4.0f;
        const uint8_t expected = std::isfinite(pixels[i]) && value > limit;
        INFO("back map " << back_map << " rms map " << rms_map << " pixel " << i);
        CHECK(mask[i] == expected);
        expected_count += expected;
      }
      CHECK(count == expected_count);
      CHECK(count > 0);
      CHECK(count < static_cast<int64_t>(n));
    }
  }
}
