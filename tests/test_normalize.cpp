// The normalize step and kernel: min-max (the intended (x - min) / (max - min)), z-score,
// constant images, NaN pixels, and the mapping that undoes it.
#include <catch2/catch.hpp>
#include <cmath>

#include "imflow/kernels/normalize.hpp"
#include "imflow/params.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
ImageBuffer image_of(const std::vector<float>& values, int64_t width) {
  ImageBuffer image;
  image.resize(width, static_cast<int64_t>(values.size()) / width);
  std::copy(values.begin(), values.end(), image.data());
  return image;
}
}  // namespace

TEST_CASE("minmax maps to [0, 1] with the intended precedence", "[normalize]") {
  ImageBuffer image = image_of({10, 20, 30, 50}, 2);
  const Normalization m = kernels::normalize(image.view(), kernels::NormalizeMethod::minmax);
  CHECK(std::vector<float>(image.begin(), image.end()) == std::vector<float>{0.0f, 0.25f, 0.5f, 1.0f});
  CHECK(m.offset == 10.0);
  CHECK(m.scale == 40.0);
  // Not the origin notebook's im - im.min() / im.max() - im.min() (= im - 10/50 - 10).
  CHECK(image.data()[1] != Approx(20.0f - 10.0f / 50.0f - 10.0f));
}

TEST_CASE("zscore uses the population std", "[normalize]") {
  ImageBuffer image = image_of({1, 2, 3, 4}, 4);
  const Normalization m = kernels::normalize(image.view(), kernels::NormalizeMethod::zscore);
  CHECK(m.offset == 2.5);
  CHECK(m.scale == Approx(std::sqrt(1.25)));
  CHECK(image.data()[0] == Approx(-1.5 / std::sqrt(1.25)));
  double sum = 0;
  for (float v : image) sum += v;
  CHECK(sum == Approx(0.0).margin(1e-6));
}

TEST_CASE("constant images become zeros, NaN pixels are ignored and kept", "[normalize]") {
  for (auto method : {kernels::NormalizeMethod::minmax, kernels::NormalizeMethod::zscore}) {
    ImageBuffer image = image_of({7, 7, 7, 7}, 2);
    const Normalization m = kernels::normalize(image.view(), method);
    CHECK(std::vector<float>(image.begin(), image.end()) == std::vector<float>{0, 0, 0, 0});
    CHECK(m.scale == 0.0);
    CHECK(m.offset == 7.0);  // undoing gives the constant back
  }
  ImageBuffer image = image_of({NAN, 0, 10, 5}, 2);
  kernels::normalize(image.view(), kernels::NormalizeMethod::minmax);
  CHECK(std::isnan(image.data()[0]));
  CHECK(image.data()[2] == 1.0f);
  CHECK(image.data()[3] == 0.5f);
  ImageBuffer all_nan = image_of({NAN, NAN}, 2);
  const Normalization m = kernels::normalize(all_nan.view(), kernels::NormalizeMethod::minmax);
  CHECK(m.scale == 1.0);
  CHECK(std::isnan(all_nan.data()[1]));
}

TEST_CASE("the normalize step records the mapping and composes when run twice", "[normalize]") {
  const auto pipeline = test::pipeline_from("steps: [{normalize: {method: minmax}}, {normalize: {method: zscore}}]");
  WorkItem item;
  item.pixels = image_of({10, 20, 30, 60}, 2);
  for (const auto& step : pipeline.steps) step->run_cpu(item);
  REQUIRE(item.normalization);
  const std::vector<float> original = {10, 20, 30, 60};
  for (int i = 0; i < 4; ++i) {
    CHECK(item.pixels.data()[i] * item.normalization->scale + item.normalization->offset == Approx(original[i]));
  }
  CHECK_THROWS_WITH(test::pipeline_from("steps: [{normalize: {method: max}}]"), Catch::Contains("not one of"));
}

TEST_CASE("nonfinite: zero sets NaN/Inf pixels to 0 after normalizing and counts them", "[normalize]") {
  ImageBuffer image = image_of({NAN, 0, 10, INFINITY, 5, -INFINITY}, 3);
  CHECK(kernels::zero_nonfinite(image.view()) == 3);
  CHECK(std::vector<float>(image.begin(), image.end()) == std::vector<float>{0, 0, 10, 0, 5, 0});
  CHECK(kernels::zero_nonfinite(image.view()) == 0);

  for (const char* method : {"minmax", "zscore"}) {
    INFO(method);
    const auto zero = test::pipeline_from(std::string("steps: [{normalize: {method: ") + method + ", nonfinite: zero}}]");
    WorkItem item;
    item.pixels = image_of({NAN, 2, 4, NAN, 6, 8}, 2);
    zero.steps[0]->run_cpu(item);
    CHECK(item.metrics.at("zeroed_pixels") == 2.0);
    CHECK(item.pixels.data()[0] == 0.0f);
    CHECK(item.pixels.data()[3] == 0.0f);
    // The finite pixels are normalized over the finite ones only, as without the option.
    REQUIRE(item.normalization);
    CHECK(item.normalization->offset == (std::string(method) == "minmax" ? 2.0 : 5.0));
    CHECK(item.pixels.data()[5] * item.normalization->scale + item.normalization->offset == Approx(8.0));

    const auto keep = test::pipeline_from(std::string("steps: [{normalize: {method: ") + method + "}}]");
    WorkItem kept;
    kept.pixels = image_of({NAN, 2, 4, NAN, 6, 8}, 2);
    keep.steps[0]->run_cpu(kept);
    CHECK(std::isnan(kept.pixels.data()[0]));
    CHECK(kept.metrics.count("zeroed_pixels") == 0);
  }
  WorkItem all_nan;
  all_nan.pixels = image_of({NAN, NAN}, 2);
  test::pipeline_from("steps: [{normalize: {nonfinite: zero}}]").steps[0]->run_cpu(all_nan);
  CHECK(std::vector<float>(all_nan.pixels.begin(), all_nan.pixels.end()) == std::vector<float>{0, 0});
  CHECK(all_nan.metrics.at("zeroed_pixels") == 2.0);
  CHECK_THROWS_WITH(test::pipeline_from("steps: [{normalize: {nonfinite: fill}}]"), Catch::Contains("not one of"));
}
