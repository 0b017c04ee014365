// The CUDA engine with companion images: a mask (its pixels made NaN as the image is read) and a
// flag map (IMAFLAGS_ISO from the label map the GPU sends back) give the CPU's catalogs; a weight
// map keeps device auto on the CPU and makes device cuda refuse the pipeline.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu_test_helpers.hpp"
#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;

namespace {
constexpr long kSide = 200;

// Unit noise on a sky of 100 with 40 Gaussian stars (sigma 1.5 px, peaks 8-60); fresh seed.
std::vector<double> star_field(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::uniform_real_distribution<double> where(5.0, kSide - 5.0), peak(8.0, 60.0);
  std::vector<double> image(kSide * kSide);
  for (double& p : image) p = 100.0 + noise(rng);
  for (int s = 0; s < 40; ++s) {
    const double cx = where(rng), cy = where(rng), a = peak(rng);
    for (long y = 0; y < kSide; ++y)
      for (long x = 0; x < kSide; ++x) {
        const double r2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
        if (r2 < 100.0) image[y * kSide + x] += a * std::exp(-r2 / (2 * 1.5 * 1.5));
      }
  }
  return image;
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields;
  for (size_t start = 0, comma = 0; comma != std::string::npos; start = comma + 1) {
    comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string::npos ? comma : comma - start));
  }
  return fields;
}

imflow::Pipeline companion_pipeline(const fs::path& in, const std::string& input, const std::string& steps) {
  imflow::Pipeline pipeline = test::pipeline_from("output: {formats: [csv]}\ninput: " + input + "\nsteps: " + steps + "\n");
  pipeline.input.dir = in;
  pipeline.engine.threads = 2;
  return pipeline;
}
}  // namespace

TEST_CASE("a mask and a flag map give the CPU's catalogs on the GPU", "[gpu][companions]") {
  test::TempDir dir("gpu_companions");
  fs::create_directories(dir / "in");
  const uint32_t seed = gpu_test::fresh_seed("companions");
  std::vector<double> mask(kSide * kSide, 0.0), flags(kSide * kSide, 0.0);
  std::mt19937 rng(seed + 1);
  std::uniform_int_distribution<long> pixel(0, kSide * kSide - 1);
  for (long y = 60; y < 90; ++y)
    for (long x = 40; x < 100; ++x) mask[y * kSide + x] = 3.0;  // a block above thresh 1
  for (int i = 0; i < 400; ++i) {  // below it: kept
    const long p = pixel(rng);
    if (mask[p] == 0.0) mask[p] = 0.5;
  }
  for (int i = 0; i < 3000; ++i) flags[pixel(rng)] = static_cast<double>(1 << (i % 5));
  test::write_fits(dir / "in" / "f.fits", -32, {kSide, kSide}, star_field(seed));
  test::write_fits(dir / "in" / "f.mask.fits", -32, {kSide, kSide}, mask);
  test::write_fits(dir / "in" / "f.flag.fits", 16, {kSide, kSide}, flags);
  const std::string type = GENERATE(as<std::string>{}, "or", "most");
  const std::string input = "{mask: {image: '{stem}.mask.fits', thresh: 1}, flags: {image: '{stem}.flag.fits', type: " + type + "}}";
  const std::string steps = GENERATE(as<std::string>{}, "[background, {segment: {nsigma: 3}}, {label: {connectivity: 8}}, measure]",
                                     "[{background: {method: mesh, size: 32}}, {segment: {nsigma: 1.5, relative_to: background, "
                                     "compare: float32}}, {label: {connectivity: 8}}, {deblend: {minarea: 5}}, measure]");
  INFO(steps);
  imflow::Pipeline pipeline = companion_pipeline(dir / "in", input, steps);
  std::vector<std::vector<std::string>> catalogs;
  std::vector<nlohmann::json> records;
  for (const std::string device : {"cpu", "cuda"}) {
    pipeline.engine.device = device;
    pipeline.output.dir = dir / device;
    fs::remove_all(dir / device);
    const imflow::RunSummary summary = imflow::run_pipeline(pipeline, {});
    REQUIRE(summary.items() == 1);
    REQUIRE(summary.failed() == 0);
    const auto json = nlohmann::json::parse(std::ifstream(dir / device / "summary.json"));
    CHECK(json["device"] == device);
    records.push_back(json["items"][0]);
    catalogs.push_back(lines_of(dir / device / "f.cat.csv"));
  }
  CHECK(records[0]["metrics"]["masked_pixels"].get<double>() == 30.0 * 60.0);
  CHECK(records[1]["metrics"]["masked_pixels"] == records[0]["metrics"]["masked_pixels"]);
  REQUIRE(catalogs[0].size() > 10);
  REQUIRE(catalogs[0][0].ends_with(",imaflags_iso,nimaflags_iso"));
  REQUIRE(catalogs[1].size() == catalogs[0].size());
  CHECK(catalogs[1][0] == catalogs[0][0]);
  // Rows: the integer columns and the flag map's are equal; positions within 1e-9 px (the GPU's
  // float64 sums run in another order).
  const std::vector<std::string> header = split_csv(catalogs[0][0]);
  int flagged = 0;
  for (size_t r = 1; r < catalogs[0].size(); ++r) {
    const auto a = split_csv(catalogs[0][r]), b = split_csv(catalogs[1][r]);
    REQUIRE(a.size() == header.size());
    REQUIRE(b.size() == header.size());
    for (size_t c = 0; c < header.size(); ++c) {
      const std::string& name = header[c];
      INFO("row " << r << " column " << name);
      if (name == "x" || name == "y") {
        CHECK(std::abs(std::stod(a[c]) - std::stod(b[c])) <= 1e-9);
      } else if (name == "id" || name == "npix" || name.starts_with("peak_") || name == "xmin" || name == "xmax" ||
                 name == "ymin" || name == "ymax" || name == "flags" || name.ends_with("imaflags_iso")) {
        CHECK(a[c] == b[c]);
      }
      if (name == "imaflags_iso" && a[c] != "0") ++flagged;
    }
  }
  CHECK(flagged > 0);  // the flag map reached some sources
}

TEST_CASE("a weight map keeps device auto on the CPU; device cuda refuses it", "[gpu][companions]") {
  test::TempDir dir("gpu_weight_refusal");
  fs::create_directories(dir / "in");
  test::write_fits(dir / "in" / "w.fits", -32, {kSide, kSide}, star_field(7));
  test::write_fits(dir / "in" / "w.weight.fits", -32, {kSide, kSide}, std::vector<double>(kSide * kSide, 1.0));
  imflow::Pipeline pipeline = companion_pipeline(
      dir / "in", "{weight: {image: '{stem}.weight.fits', type: map_weight}}",
      "[{background: {method: mesh, size: 32}}, {segment: {nsigma: 3, relative_to: rms_map}}, label, measure]");
  pipeline.output.dir = dir / "auto";
  pipeline.engine.device = "auto";
  REQUIRE(imflow::run_pipeline(pipeline, {}).failed() == 0);
  CHECK(nlohmann::json::parse(std::ifstream(dir / "auto" / "summary.json"))["device"] == "cpu");
  pipeline.engine.device = "cuda";
  pipeline.output.dir = dir / "cuda";
  CHECK_THROWS_AS(imflow::run_pipeline(pipeline, {}), imflow::ConfigError);
}
