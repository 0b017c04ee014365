// SExtractor's WEIGHT_GAIN (input.weight.gain): a pixel's Poisson term value / gain scaled by its
// variance / the global background variance, in FLUXERR_ISO (every pixel of the isophote), the
// AUTO ellipse's pixels and every pixel within r + 0.75 of an aperture's centre; the option's
// default and its place in the resolved pipeline.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "imflow/kernels/measure.hpp"
#include "imflow/kernels/photometry.hpp"
#include "imflow/kernels/weight_gain.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
constexpr int64_t kWeightedSide = 7;

// A 7 x 7 image of 1s (one pixel -1) with variance 2 everywhere, gain 2, backsig^2 4: a pixel's
// term is 1 / 2 x 2 / 4 = 0.25.
struct WeightedField {
  std::vector<float> data = std::vector<float>(kWeightedSide * kWeightedSide, 1.0f);
  std::vector<float> variance = std::vector<float>(kWeightedSide * kWeightedSide, 2.0f);
  std::vector<float> mask = std::vector<float>(kWeightedSide * kWeightedSide, 0.0f);
  kernels::ApertureImage image() const {
    kernels::ApertureImage out;
    out.data = {data.data(), kWeightedSide, kWeightedSide};
    out.noise = variance.data();
    out.noise_kind = kernels::NoiseKind::variance;
    out.gain = 2.0;
    return out;
  }
};
}  // namespace

TEST_CASE("WEIGHT_GAIN scales a positive pixel's Poisson term by its variance / backsig^2", "[weight][gain]") {
  CHECK(kernels::pixel_variance(2.0, 8.0, 4.0) == 6.0);             // 4 + 8 / 4
  CHECK(kernels::pixel_variance(2.0, 8.0, 4.0, 16.0) == 4.5);       // 4 + 8 / 4 x 4 / 16
  CHECK(kernels::pixel_variance(2.0, -8.0, 4.0, 16.0) == 4.0);      // no term for a negative value
  CHECK(kernels::pixel_variance(2.0, 8.0, 0.0, 16.0) == 4.0);       // nor without a gain
  CHECK(kernels::weight_gain_term(8.0, 4.0, 4.0, 16.0) == 0.5);
  CHECK(kernels::weight_gain_term(0.0, 4.0, 4.0, 16.0) == 0.0);
}

TEST_CASE("FLUXERR_ISO with WEIGHT_GAIN sums each pixel's scaled term", "[weight][gain]") {
  // One 2 x 2 source on an RMS map of 1 and 3: sum of rms^2 (1 + w / gain x rms^2 / R^2).
  const std::vector<float> image = {4.0f, 8.0f, 2.0f, -1.0f};
  const std::vector<float> rms = {1.0f, 3.0f, 1.0f, 3.0f};
  const std::vector<float> back(4, 0.0f);
  const std::vector<int32_t> labels(4, 1);
  kernels::MeasureBackground background;
  background.map = back.data();
  background.rms_map = rms.data();
  background.gain = 2.0;
  background.weight_gain_rms = 2.0;
  const double expected = (1 + 4.0 / 2 * 1 / 4) + (9 + 8.0 / 2 * 9 / 4) + (1 + 2.0 / 2 * 1 / 4) + 9;
  const Catalog scaled = kernels::measure_sources({image.data(), 2, 2}, labels.data(), 1, background);
  CHECK(scaled[0].flux_iso_err == Approx(std::sqrt(expected)).epsilon(1e-12));
  background.weight_gain_rms = 0.0;  // input.weight.gain: false: w / gain per pixel
  const Catalog plain = kernels::measure_sources({image.data(), 2, 2}, labels.data(), 1, background);
  CHECK(plain[0].flux_iso_err == Approx(std::sqrt(1 + 2.0 + 9 + 4.0 + 1 + 1.0 + 9)).epsilon(1e-12));
}

TEST_CASE("an aperture's WEIGHT_GAIN terms cover every pixel within r + 0.75, not weighed by overlap", "[weight][gain]") {
  WeightedField field;
  // r = 1 about (3, 3): the pixels at squared distances 0, 1 and 2 (< 1.75^2), 9 of them, though
  // the corners (sqrt 2 away) lie mostly outside the circle.
  CHECK(kernels::weight_gain_circle(field.image(), 3.0, 3.0, 1.0, 4.0) == Approx(9 * 0.25));
  field.data[4 * kWeightedSide + 4] = -1.0f;  // a negative corner adds nothing
  CHECK(kernels::weight_gain_circle(field.image(), 3.0, 3.0, 1.0, 4.0) == Approx(8 * 0.25));
  field.mask[2 * kWeightedSide + 3] = 1.0f;  // nor does a masked pixel (its variance is area-corrected)
  kernels::ApertureImage masked = field.image();
  masked.mask = field.mask.data();
  CHECK(kernels::weight_gain_circle(masked, 3.0, 3.0, 1.0, 4.0) == Approx(7 * 0.25));
  // At the edge the box is cut: about (0, 0) the 4 pixels with squared distance <= 2.
  CHECK(kernels::weight_gain_circle(field.image(), 0.0, 0.0, 1.0, 4.0) == Approx(4 * 0.25));
}

TEST_CASE("the AUTO ellipse's WEIGHT_GAIN terms cover the pixels whose centre is inside", "[weight][gain]") {
  const WeightedField field;
  kernels::AutoParams params;
  params.kron_factor = 2.5;
  params.min_radius = 0.0;
  // a = b = 1: radius 2.5 x 0.38 = 0.95 keeps the centre alone, 2.5 x 0.6 = 1.5 the 3 x 3 pixels.
  CHECK(kernels::weight_gain_auto(field.image(), 3.0, 3.0, 1.0, 1.0, 0.0, params, 0.38, 4.0) == Approx(0.25));
  CHECK(kernels::weight_gain_auto(field.image(), 3.0, 3.0, 1.0, 1.0, 0.0, params, 0.6, 4.0) == Approx(9 * 0.25));
  params.min_radius = 2.1;  // kron radius x sqrt(a b) = 0.6 < 2.1: the circle of radius 2.1 (13 pixels)
  CHECK(kernels::weight_gain_auto(field.image(), 3.0, 3.0, 1.0, 1.0, 0.0, params, 0.6, 4.0) == Approx(13 * 0.25));
}

TEST_CASE("measure_photometry's WEIGHT_GAIN replaces the apertures' flux / gain by the per-pixel terms",
          "[weight][gain]") {
  const WeightedField field;
  kernels::PhotometrySpec spec;
  spec.apertures = 1;
  spec.aperture_diameters[0] = 2.0;
  spec.aperture_subpix = 5;
  const kernels::PhotometrySource source{3.0, 3.0, 1.0, 1.0, 0.0, 1};
  std::vector<double> row(static_cast<size_t>(spec.stride()));
  kernels::measure_photometry(field.image(), nullptr, spec, source, row.data(), nullptr);
  kernels::ApertureImage noiseless_gain = field.image();
  noiseless_gain.gain = 0.0;
  const kernels::ApertureSum plain = kernels::sum_circle(noiseless_gain, 3.0, 3.0, 1.0, 5);
  CHECK(row[1] == Approx(std::sqrt(plain.error * plain.error + plain.sum / 2.0)));  // flux / gain
  std::vector<double> weighted(row.size());
  kernels::measure_photometry(field.image(), nullptr, spec, source, weighted.data(), nullptr, 4.0);
  CHECK(weighted[0] == plain.sum);
  CHECK(weighted[1] == Approx(std::sqrt(plain.error * plain.error + 9 * 0.25)).epsilon(1e-12));
  std::vector<double> unweighted(row.size());
  kernels::measure_photometry(field.image(), nullptr, spec, source, unweighted.data(), nullptr, 0.0);  // no backsig
  CHECK(unweighted[1] == row[1]);
}

TEST_CASE("WEIGHT_GAIN scales each windowed pixel's Poisson term by its variance / backsig^2", "[weight][gain]") {
  WeightedField field;
  std::fill(field.data.begin(), field.data.end(), 1.0f);  // every pixel positive: every pixel has the term
  kernels::ApertureImage image = field.image();           // variance 2, gain 2: value / gain = 0.5
  image.gain = 0.0;
  const kernels::WindowedPosition plain = kernels::winpos(image, 3.0, 3.0, 1.0);
  image.gain = 2.0;
  const kernels::WindowedPosition poisson = kernels::winpos(image, 3.0, 3.0, 1.0);
  const kernels::WindowedPosition weighted = kernels::winpos(image, 3.0, 3.0, 1.0, 11, kernels::kWinposMinSig, 4.0);
  REQUIRE(plain.flux_var > 0.0);
  CHECK(poisson.flux_var == Approx(plain.flux_var * 2.5 / 2.0).epsilon(1e-12));   // 2 + 0.5 per pixel
  CHECK(weighted.flux_var == Approx(plain.flux_var * 2.25 / 2.0).epsilon(1e-12));  // 2 + 0.5 x 2 / 4
  CHECK(weighted.x == poisson.x);
}

TEST_CASE("input.weight.gain is SExtractor's WEIGHT_GAIN, on by default", "[weight][gain][config]") {
  const std::string mesh = "steps: [{background: {method: mesh}}, {segment: {relative_to: rms_map}}, label, measure]\n";
  CHECK(test::pipeline_from("input: {weight: {image: WHT, type: map_weight}}\n" + mesh)
            .resolved()["input"]["weight"]["gain"]
            .as<bool>());
  CHECK_FALSE(test::pipeline_from("input: {weight: {image: WHT, type: map_weight, gain: false}}\n" + mesh)
                  .resolved()["input"]["weight"]["gain"]
                  .as<bool>());
  CHECK_THROWS_WITH(test::pipeline_from("input: {weight: {image: WHT, type: map_weight, gain: 2.5}}\n" + mesh),
                    Catch::Contains("gain"));
}
