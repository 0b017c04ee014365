// The CUDA engine with companion images gives the CPU's catalogs: a mask (its pixels made NaN as
// the image is read), a flag map (IMAFLAGS_ISO from the label map the GPU sends back) and a weight
// map (its RMS map and rescaling made on the device), in dual-image mode one per image; and a
// detection filter after the background (the image less it filtered on the device).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog_compare.hpp"
#include "gpu_test_helpers.hpp"
#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;

namespace {
using gpu_test::split_csv;
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

imflow::Pipeline companion_pipeline(const fs::path& in, const std::string& input, const std::string& steps) {
  imflow::Pipeline pipeline = test::pipeline_from("output: {formats: [csv]}\ninput: " + input + "\nsteps: " + steps + "\n");
  pipeline.input.dir = in;
  pipeline.engine.threads = 2;
  return pipeline;
}

struct DeviceRuns {
  std::vector<nlohmann::json> records;             // summary.json's item, cpu then cuda
  std::vector<std::vector<std::string>> catalogs;  // the CSV catalog's lines
};

// `pipeline` on the CPU, then on the GPU, over one image whose catalog is `catalog`.
DeviceRuns run_on_both(imflow::Pipeline pipeline, const fs::path& dir, const std::string& catalog) {
  DeviceRuns runs;
  for (const std::string device : {"cpu", "cuda"}) {
    pipeline.engine.device = device;
    pipeline.output.dir = dir / device;
    fs::remove_all(dir / device);
    const imflow::RunSummary summary = imflow::run_pipeline(pipeline, {});
    REQUIRE(summary.items() == 1);
    REQUIRE(summary.failed() == 0);
    const auto json = nlohmann::json::parse(std::ifstream(dir / device / "summary.json"));
    CHECK(json["device"] == device);
    runs.records.push_back(json["items"][0]);
    runs.catalogs.push_back(lines_of(dir / device / catalog));
  }
  return runs;
}

// The catalogs of both runs, line for line (catalog_compare.hpp).
void require_same_catalogs(const DeviceRuns& runs) { gpu_test::require_same_catalog_lines(runs.catalogs); }

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
  const DeviceRuns runs = run_on_both(companion_pipeline(dir / "in", input, steps), dir.path(), "f.cat.csv");
  const auto& records = runs.records;
  const auto& catalogs = runs.catalogs;
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

TEST_CASE("a weight map gives the CPU's RMS map, rescaling and catalogs on the GPU", "[gpu][companions]") {
  test::TempDir dir("gpu_weight");
  fs::create_directories(dir / "in");
  const uint32_t seed = gpu_test::fresh_seed("weight");
  // The noise grows from 1 to 3 across the columns; a weight map that knows it (x 4 of the truth,
  // so rescaling matters), with no exposure in a band of columns and a corner block.
  std::vector<double> image = star_field(seed), noise_sigma(kSide * kSide);
  std::mt19937 rng(seed + 2);
  std::normal_distribution<double> gauss(0.0, 1.0);
  for (long y = 0; y < kSide; ++y)
    for (long x = 0; x < kSide; ++x) {
      const double sigma = 1.0 + 2.0 * static_cast<double>(x) / kSide;
      noise_sigma[y * kSide + x] = sigma;
      image[y * kSide + x] += std::sqrt(sigma * sigma - 1.0) * gauss(rng);  // star_field has unit noise
    }
  // SExtractor rescales weight and variance maps (RESCALE_WEIGHTS), never an RMS map.
  const auto [type, rescale] = GENERATE(table<std::string, bool>(
      {{"map_weight", true}, {"map_weight", false}, {"map_var", true}, {"map_var", false}, {"map_rms", false}}));
  std::vector<double> map(kSide * kSide);
  long bad = 0;
  for (long y = 0; y < kSide; ++y)
    for (long x = 0; x < kSide; ++x) {
      const double sigma = noise_sigma[y * kSide + x] * 2.0;
      const bool gap = (x >= 120 && x < 126) || (x < 30 && y < 30);
      bad += gap ? 1 : 0;
      if (type == "map_weight") map[y * kSide + x] = gap ? 0.0 : 1.0 / (sigma * sigma);
      if (type == "map_rms") map[y * kSide + x] = gap ? 1e31 : sigma;
      if (type == "map_var") map[y * kSide + x] = gap ? 1e31 : sigma * sigma;
    }
  test::write_fits(dir / "in" / "w.fits", -32, {kSide, kSide}, image);
  test::write_fits(dir / "in" / "w.weight.fits", -32, {kSide, kSide}, map);
  const std::string input = "{weight: {image: '{stem}.weight.fits', type: " + type +
                            (type == "map_rms" ? std::string() : std::string(", rescale: ") + (rescale ? "true" : "false")) +
                            "}}";
  const std::string steps = GENERATE(as<std::string>{},
                                     "[{background: {method: mesh, size: 32}}, {segment: {nsigma: 3, relative_to: rms_map}}, "
                                     "{label: {connectivity: 8}}, {measure: {gain: 0}}]",
                                     "[{background: {method: mesh, size: 40}}, {segment: {nsigma: 1.5, relative_to: rms_map, "
                                     "compare: float32}}, {label: {connectivity: 8}}, {deblend: {minarea: 5}}, "
                                     "{measure: {gain: 2, auto: {kron_fact: 2.5, min_radius: 3.5}, apertures: [6]}}]",
                                     // VIGNETs: the rows are measured when the results are collected
                                     "[{background: {method: mesh, size: 40}}, {segment: {nsigma: 1.5, relative_to: rms_map, "
                                     "compare: float32}}, {label: {connectivity: 8}}, "
                                     "{measure: {gain: 4, auto: {kron_fact: 2.5, min_radius: 3.5}, apertures: [4, 8], "
                                     "windowed: true, vignet: [9, 9]}}]");
  INFO(type << " rescale " << rescale << " " << steps);
  const DeviceRuns runs = run_on_both(companion_pipeline(dir / "in", input, steps), dir.path(), "w.cat.csv");
  CHECK(runs.records[0]["metrics"]["weight_bad_pixels"].get<double>() == static_cast<double>(bad));
  CHECK(runs.records[1]["metrics"]["weight_bad_pixels"] == runs.records[0]["metrics"]["weight_bad_pixels"]);
  const double scale = runs.records[0]["metrics"]["weight_scale"].get<double>();
  if (rescale) {  // the map says twice the true noise (4x for weights): the factor is about 1/2
    CHECK(scale > 0.4);
    CHECK(scale < 0.6);
  } else {
    CHECK(scale == 1.0);
  }
  CHECK(runs.records[1]["metrics"]["weight_scale"].get<double>() == Approx(scale).epsilon(1e-6));
  require_same_catalogs(runs);
}

TEST_CASE("dual-image mode detects on one image and measures another on the GPU as on the CPU", "[gpu][companions]") {
  test::TempDir dir("gpu_dual_image");
  fs::create_directories(dir / "in");
  fs::create_directories(dir / "detect");
  const uint32_t seed = gpu_test::fresh_seed("dual");
  // The measured band: the same stars at 0.6 of their flux on a sky of 150, with noise of its own.
  const std::vector<double> detection = star_field(seed);
  std::vector<double> measured(detection.size());
  std::mt19937 rng(seed + 3);
  std::normal_distribution<double> gauss(0.0, 1.5);
  for (size_t i = 0; i < detection.size(); ++i) measured[i] = 150.0 + 0.6 * (detection[i] - 100.0) + gauss(rng);
  test::write_fits(dir / "detect" / "d.fits", -32, {kSide, kSide}, detection);
  test::write_fits(dir / "in" / "d.fits", -32, {kSide, kSide}, measured);
  const std::string steps = GENERATE(
      as<std::string>{}, "[background, {segment: {nsigma: 3}}, {label: {connectivity: 8}}, {measure: {gain: 1, saturation: 170}}]",
      "[{convolve: {kernel: [[1, 2, 1], [2, 4, 2], [1, 2, 1]], apply_to: detection, arithmetic: sep}}, {background: {method: mesh, size: 32}}, "
      "{segment: {nsigma: 1.5, relative_to: rms_map, compare: float32}}, {label: {connectivity: 8}}, "
      "{deblend: {minarea: 5, clean_style: sextractor, draws: sextractor}}, "
      "{measure: {gain: 2, auto: {kron_fact: 2.5, min_radius: 3.5}, apertures: [6], windowed: true, saturation: 170}}]");
  INFO(steps);
  imflow::Pipeline pipeline = companion_pipeline(dir / "in", "{detect: {image: '../detect/{stem}.fits'}}", steps);
  const DeviceRuns runs = run_on_both(std::move(pipeline), dir.path(), "d.cat.csv");
  require_same_catalogs(runs);
  // The fluxes are the measured band's: about 0.6 of the detection image's (its sky removed).
  const auto header = split_csv(runs.catalogs[1][0]);
  const size_t flux = static_cast<size_t>(std::find(header.begin(), header.end(), "flux_iso") - header.begin());
  REQUIRE(flux < header.size());
  double sum = 0.0;
  for (size_t r = 1; r < runs.catalogs[1].size(); ++r) sum += std::stod(split_csv(runs.catalogs[1][r])[flux]);
  CHECK(sum > 0.0);
  // Saturated: the measured band's peaks (155-186) reach 170 for some stars; the detection
  // image's (108-160) never would.
  const size_t flags = static_cast<size_t>(std::find(header.begin(), header.end(), "flags") - header.begin());
  REQUIRE(flags < header.size());
  size_t saturated = 0;
  for (size_t r = 1; r < runs.catalogs[1].size(); ++r) saturated += (std::stoi(split_csv(runs.catalogs[1][r])[flags]) & 16) != 0;
  CHECK(saturated > 0);
  CHECK(saturated + 1 < runs.catalogs[1].size());
}

TEST_CASE("dual-image mode with weight maps gives the CPU's noise and catalogs on the GPU", "[gpu][companions]") {
  test::TempDir dir("gpu_dual_weight");
  fs::create_directories(dir / "in");
  const uint32_t seed = gpu_test::fresh_seed("dual_weight");
  // The detection image's noise grows from 1 to 3 across the columns, the measured band's (0.6 x
  // the flux on a sky of 150) from 1.5 down to 0.5; each weight map knows its image's noise, at
  // 4x (rescaling matters), with a band of columns of no exposure in the detection image's map.
  const std::vector<double> stars = star_field(seed);
  std::vector<double> detection(stars.size()), measured(stars.size()), detect_weight(stars.size()),
      measured_variance(stars.size());
  std::mt19937 rng(seed + 5);
  std::normal_distribution<double> gauss(0.0, 1.0);
  for (long y = 0; y < kSide; ++y)
    for (long x = 0; x < kSide; ++x) {
      const size_t i = static_cast<size_t>(y * kSide + x);
      const double rising = 1.0 + 2.0 * static_cast<double>(x) / kSide, falling = 1.5 - static_cast<double>(x) / kSide;
      detection[i] = stars[i] + std::sqrt(rising * rising - 1.0) * gauss(rng);
      measured[i] = 150.0 + 0.6 * (stars[i] - 100.0) + falling * gauss(rng);
      detect_weight[i] = x >= 120 && x < 126 ? 0.0 : 1.0 / (4.0 * rising * rising);
      measured_variance[i] = 4.0 * (0.36 + falling * falling);
    }
  test::write_fits(dir / "in" / "m.fits", -32, {kSide, kSide}, measured);
  test::write_fits(dir / "in" / "m.det.fits", -32, {kSide, kSide}, detection);
  test::write_fits(dir / "in" / "m.det.weight.fits", -32, {kSide, kSide}, detect_weight);
  test::write_fits(dir / "in" / "m.var.fits", -32, {kSide, kSide}, measured_variance);
  const std::string detect_weight_key = ", weight: {image: '{stem}.det.weight.fits', type: map_weight}";
  const std::string measured_weight_key = ", weight: {image: '{stem}.var.fits', type: map_var}";
  const auto [both, detect_only] = GENERATE(table<bool, bool>({{true, false}, {false, true}, {false, false}}));
  const bool detect_has = both || detect_only, measured_has = both || !detect_only;
  const std::string input = "{patterns: ['m.fits'], detect: {image: '{stem}.det.fits'" +
                            (detect_has ? detect_weight_key : std::string()) + "}" +
                            (measured_has ? measured_weight_key : std::string()) + "}";
  const std::string steps =
      "[{background: {method: mesh, size: 40}}, {segment: {nsigma: 1.5, relative_to: rms_map, compare: float32}}, "
      "{label: {connectivity: 8}}, {deblend: {minarea: 5}}, "
      "{measure: {gain: 2, auto: {kron_fact: 2.5, min_radius: 3.5}, apertures: [6], windowed: true}}]";
  INFO(input);
  const DeviceRuns runs = run_on_both(companion_pipeline(dir / "in", input, steps), dir.path(), "m.cat.csv");
  for (const char* metric : {"weight_scale", "detect_weight_scale"}) {
    const bool expected = std::string(metric) == "weight_scale" ? measured_has : detect_has;
    CHECK(runs.records[0]["metrics"].contains(metric) == expected);
    CHECK(runs.records[1]["metrics"].contains(metric) == expected);
    if (!expected) continue;
    const double scale = runs.records[0]["metrics"][metric].get<double>();
    CHECK(scale > 0.4);  // the maps say twice the noise: the factor is about 1/2
    CHECK(scale < 0.6);
    CHECK(runs.records[1]["metrics"][metric].get<double>() == Approx(scale).epsilon(1e-6));
  }
  require_same_catalogs(runs);
}

TEST_CASE("a detection filter after the background gives the CPU's catalogs on the GPU", "[gpu][convolve]") {
  test::TempDir dir("gpu_filter_after_background");
  fs::create_directories(dir / "in");
  // Stars on the borders too, where filtering the raw image (zero padding) would darken the sky.
  std::vector<double> image = star_field(gpu_test::fresh_seed("filter_after_background"));
  for (const auto& [cx, cy] : {std::pair{0.5, 60.0}, std::pair{120.0, kSide - 1.0}, std::pair{kSide - 1.5, 150.0}})
    for (long y = 0; y < kSide; ++y)
      for (long x = 0; x < kSide; ++x) {
        const double r2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
        if (r2 < 100.0) image[y * kSide + x] += 30.0 * std::exp(-r2 / (2 * 1.5 * 1.5));
      }
  test::write_fits(dir / "in" / "f.fits", -32, {kSide, kSide}, image);
  // FILTER Y: the image less its background filtered (SEP's or imflow's arithmetic), thresholded
  // against the unfiltered RMS (global, per pixel, float32 or float64), with and without deblending.
  const std::string steps = GENERATE(
      as<std::string>{},
      "[{background: {method: mesh, size: 40}}, {convolve: {kernel: [[1, 2, 1], [2, 4, 2], [1, 2, 1]], arithmetic: sep}}, "
      "{segment: {nsigma: 1.5, relative_to: background, compare: float32}}, {label: {connectivity: 8}}, "
      "{deblend: {minarea: 5}}, {measure: {gain: 2, auto: true, apertures: [6]}}]",
      "[{background: {method: mesh, size: 40}}, {convolve: {kernel: [[1, 2, 1], [2, 4, 2], [1, 2, 1]], arithmetic: sep}}, "
      "{segment: {nsigma: 1.5, relative_to: rms_map, compare: float32}}, {label: {connectivity: 8}}, "
      "{deblend: {minarea: 5}}, {measure: {gain: 0}}]",
      "[{background: {method: mesh, size: 40}}, {convolve: {kernel: gaussian, size: 5, sigma: 1.0}}, "
      "{segment: {nsigma: 2, relative_to: rms_map}}, {label: {connectivity: 8}}, measure]",
      "[background, {convolve: {kernel: [[1, 2, 1], [2, 4, 2], [1, 2, 1]], arithmetic: sep}}, {segment: {nsigma: 3}}, "
      "{label: {connectivity: 8}}, measure]");
  INFO(steps);
  const DeviceRuns runs = run_on_both(companion_pipeline(dir / "in", "{patterns: ['f.fits']}", steps), dir.path(), "f.cat.csv");
  require_same_catalogs(runs);
  // The border stars are found (their boxes touch the edges).
  const auto header = split_csv(runs.catalogs[1][0]);
  auto column = [&](const char* name) { return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin()); };
  int on_edges = 0;
  for (size_t r = 1; r < runs.catalogs[1].size(); ++r) {
    const auto row = split_csv(runs.catalogs[1][r]);
    on_edges += row[column("xmin")] == "0" || row[column("ymax")] == std::to_string(kSide - 1) ||
                row[column("xmax")] == std::to_string(kSide - 1);
  }
  CHECK(on_edges >= 3);
}
