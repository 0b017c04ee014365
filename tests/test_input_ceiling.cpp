// imflow bench --ceiling: the inputs read with no steps (items, failures, bytes, rates).
#include <catch2/catch.hpp>

#include "bench/input_ceiling.hpp"
#include "input_ceiling_fixture.hpp"

using namespace imflow::bench;

TEST_CASE("the input ceiling reads every plane once per pass and counts failures", "[bench][ceiling]") {
  test::TempDir dir("input_ceiling");
  const ceiling_test::CeilingInputs expected = ceiling_test::make_ceiling_inputs(dir.path() / "in");
  const imflow::Pipeline pipeline = ceiling_test::ceiling_pipeline(dir.path() / "in", "cpu");
  const nlohmann::json ceiling = measure_input_ceiling(pipeline, 2, 3);
  CHECK(ceiling["device"] == "cpu");
  CHECK(ceiling["threads"] == 2);
  CHECK(ceiling["items"] == expected.items);
  CHECK(ceiling["failed"] == expected.failed);
  CHECK(ceiling["megabytes"].get<double>() == Approx(expected.megabytes).epsilon(1e-12));
  const auto& seconds = ceiling["seconds"];
  CHECK(0 < seconds["min"].get<double>());
  CHECK(seconds["min"].get<double>() <= seconds["median"].get<double>());
  CHECK(seconds["median"].get<double>() <= seconds["max"].get<double>());
  CHECK(ceiling["images_per_second"]["median"].get<double>() ==
        Approx(static_cast<double>(expected.items) / seconds["median"].get<double>()));
  CHECK(ceiling["megabytes_per_second"].get<double>() == Approx(expected.megabytes / seconds["median"].get<double>()));
}
