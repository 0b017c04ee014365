// Pipeline YAML: defaults, overrides, and errors that name the key, the line and the column.
#include <catch2/catch.hpp>

#include "imflow/errors.hpp"
#include "test_helpers.hpp"

using Catch::Matchers::Contains;

namespace {
std::string config_error_of(const std::string& yaml) {
  try {
    test::pipeline_from(yaml);
  } catch (const imflow::ConfigError& error) {
    return error.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("a minimal pipeline gets every default", "[config]") {
  const auto pipeline = test::pipeline_from("input: {dir: in}\nsteps: [background, segment, label, measure]\n");
  CHECK(pipeline.input.dir == "in");
  CHECK(pipeline.output.dir == "imflow-out");
  CHECK(pipeline.engine.device == "auto");
  REQUIRE(pipeline.steps.size() == 4);
  const YAML::Node resolved = pipeline.resolved();
  CHECK(resolved["steps"][0]["background"]["kappa"].as<double>() == 3.0);
  CHECK(resolved["steps"][0]["background"]["max_iters"].as<int>() == 100);
  CHECK(resolved["steps"][1]["segment"]["nsigma"].as<double>() == 5.0);
  CHECK(resolved["steps"][2]["label"]["connectivity"].as<int>() == 4);
  CHECK(pipeline.input.extnames.empty());
  CHECK(pipeline.input.nifti_cache_mb == 1024);
  const auto hst = test::pipeline_from("input: {dir: in, extnames: [SCI], nifti_cache_mb: 0}\nsteps: [background]\n");
  CHECK(hst.input.extnames == std::vector<std::string>{"SCI"});
  CHECK(hst.input.nifti_cache_mb == 0);
  CHECK(hst.resolved()["input"]["extnames"][0].as<std::string>() == "SCI");
  CHECK(pipeline.output.merged_catalog);
  CHECK(resolved["output"]["merged_catalog"].as<bool>());
  const auto unmerged = test::pipeline_from("output: {merged_catalog: false}\nsteps: [background]\n");
  CHECK_FALSE(unmerged.output.merged_catalog);
  CHECK_FALSE(unmerged.resolved()["output"]["merged_catalog"].as<bool>());
}

TEST_CASE("unknown keys are errors with line and column", "[config]") {
  CHECK_THAT(config_error_of("steps:\n  - background: {kapa: 3}\n"),
             Contains("test.yaml:2:") && Contains("steps[0].background.kapa") && Contains("unknown key"));
  CHECK_THAT(config_error_of("inptu: {dir: x}\nsteps: [background]\n"), Contains("test.yaml:1:1") && Contains("inptu"));
}

TEST_CASE("wrong types and out-of-range values are errors", "[config]") {
  CHECK_THAT(config_error_of("steps:\n  - background:\n      kappa: abc\n"),
             Contains("test.yaml:3:14") && Contains("kappa") && Contains("expected a number"));
  CHECK_THAT(config_error_of("steps:\n  - background: {max_iters: 0}\n"), Contains("max_iters") && Contains("out of range"));
  CHECK_THAT(config_error_of("steps: [background, segment, {label: {connectivity: 6}}]\n"), Contains("connectivity"));
  CHECK_THAT(config_error_of("device: gpu\nsteps: [background]\n"), Contains("test.yaml:1:9") && Contains("not one of"));
  CHECK_THAT(config_error_of("output: {formats: [csv, xls]}\nsteps: [background]\n"), Contains("xls"));
  CHECK_THAT(config_error_of("output: {merged_catalog: often}\nsteps: [background]\n"), Contains("merged_catalog"));
}

TEST_CASE("unknown steps and steps out of order are errors", "[config]") {
  CHECK_THAT(config_error_of("steps: [backgrund]\n"), Contains("unknown step 'backgrund'") && Contains("known:"));
  CHECK_THAT(config_error_of("steps: [background, label]\n"), Contains("steps[1].label") && Contains("needs 'mask'"));
  CHECK_THAT(config_error_of("steps: []\n"), Contains("steps"));
  // Without a value of their own, errors point at the key, or at the step given by name only.
  CHECK_THAT(config_error_of("input: {dir: x}\nsteps:\n"), Contains("test.yaml:2:1: steps: expected a non-empty list"));
  CHECK_THAT(config_error_of("steps:\n  - map\n"), Contains("test.yaml:2:5: steps[0].map.expression: required"));
  CHECK_THAT(config_error_of("steps: [convolve: {mode: full}]\n"), Contains("apply_to: image"));
  // A product is made once; deblend refines the labels; image steps repeat.
  CHECK_THAT(config_error_of("steps: [background, background, segment, label, measure]\n"),
             Contains("steps[1].background") && Contains("already made by steps[0].background"));
  CHECK_THAT(config_error_of("steps: [background, segment, label, measure, measure]\n"),
             Contains("steps[4].measure: the catalog is already made by steps[3].measure"));
  CHECK(config_error_of("steps: [background, {segment: {compare: float32}}, {label: {connectivity: 8}}, deblend, measure]\n") == "no error");
  CHECK(config_error_of("steps: [convolve, convolve, map: {expression: x}, map: {expression: x}]\n") == "no error");
}

TEST_CASE("settings that could only fail every image, or mean nothing, are errors", "[config]") {
  // The RMS map comes from the mesh background only.
  CHECK_THAT(config_error_of("steps: [background, {segment: {relative_to: rms_map}}, label, measure]\n"),
             Contains("steps[1].segment") && Contains("rms_map needs the mesh background"));
  CHECK(config_error_of("steps: [{background: {method: mesh}}, {segment: {relative_to: rms_map}}, label]\n") == "no error");
  CHECK_THAT(config_error_of("steps: [background, {segment: {nsigma: -5}}]\n"), Contains("test.yaml:1:") && Contains("nsigma") && Contains("must be > 0"));
  CHECK_THAT(config_error_of("steps: [background, {segment: {nsigma: 0}}]\n"), Contains("nsigma"));
  for (const char* arithmetic : {"imflow", "sep"}) {  // a kernel of zeros blanks the image
    CHECK_THAT(config_error_of(std::string("steps: [{convolve: {kernel: [[0, 0], [0, 0]], arithmetic: ") + arithmetic + "}}]\n"),
               Contains("test.yaml:1:") && Contains("steps[0].convolve.kernel") && Contains("every entry is 0"));
  }
  // A key given twice: YAML forbids it, yaml-cpp would keep the first silently.
  CHECK_THAT(config_error_of("device: cpu\ndevice: cuda\nsteps: [background]\n"),
             Contains("test.yaml:2:1") && Contains("device: given twice"));
  CHECK_THAT(config_error_of("steps:\n  - background: {kappa: 3, kappa: 1}\n"), Contains("test.yaml:2:28") && Contains("kappa: given twice"));
}

TEST_CASE("YAML syntax errors carry a position", "[config]") {
  CHECK_THAT(config_error_of("steps: [background\n"), Contains("test.yaml:") && Contains("YAML syntax error"));
}

TEST_CASE("devices: all, a list, and bad values", "[config]") {
  CHECK(test::pipeline_from("steps: [background]\n").engine.devices.empty());
  CHECK(test::pipeline_from("devices: all\nsteps: [background]\n").engine.devices.empty());
  CHECK(test::pipeline_from("devices: [0, 1]\nsteps: [background]\n").engine.devices == std::vector<int>{0, 1});
  CHECK_THAT(config_error_of("devices: [0, -1]\nsteps: [background]\n"), Contains("test.yaml:1:14") && Contains("devices"));
  CHECK_THAT(config_error_of("devices: some\nsteps: [background]\n"), Contains("devices"));
  CHECK(imflow::parse_device_list("all").empty());
  CHECK(imflow::parse_device_list("1,0") == std::vector<int>{1, 0});
  CHECK_THROWS_AS(imflow::parse_device_list("0,x"), imflow::ConfigError);
}
