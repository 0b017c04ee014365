// imflow bench --ceiling on a GPU: every plane read into pinned memory and copied to the device
// (float32 FITS left big-endian, as the CUDA engine reads them), failures counted.
#include "src/bench/input_ceiling.hpp"
#include "gpu_test_helpers.hpp"
#include "tests/input_ceiling_fixture.hpp"

TEST_CASE("the input ceiling on a GPU reads and uploads every plane", "[gpu][bench][ceiling]") {
  test::TempDir dir("gpu_input_ceiling");
  const ceiling_test::CeilingInputs expected = ceiling_test::make_ceiling_inputs(dir.path() / "in");
  const imflow::Pipeline pipeline = ceiling_test::ceiling_pipeline(dir.path() / "in", "cuda");
  const nlohmann::json ceiling = imflow::bench::measure_input_ceiling(pipeline, 4, 2);
  CHECK(ceiling["device"] == "cuda");
  CHECK_THAT(ceiling["what"].get<std::string>(), Catch::Contains("copied to the GPU"));
  CHECK(ceiling["items"] == expected.items);
  CHECK(ceiling["failed"] == expected.failed);
  CHECK(ceiling["megabytes"].get<double>() == Approx(expected.megabytes).epsilon(1e-12));
  CHECK(ceiling["images_per_second"]["min"].get<double>() > 0);
}
