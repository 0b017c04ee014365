// Tiled runs end to end (docs/tiling.md): images larger than the tile are read tile by tile and
// give the whole-image run's catalogs (same ids, npix, bboxes, peaks; sums to float64 rounding),
// byte-identical label maps and bgsub images, the same background; for several tile sizes,
// with and without convolution (halo auto), 4- and 8-connectivity, integer and compressed input.
#include <catch2/catch.hpp>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/tiling.hpp"
#include "test_helpers.hpp"
#include "tiling_test_helpers.hpp"

using namespace imflow;
namespace fs = std::filesystem;

using namespace tiling_test;

namespace {
// halo: auto = the convolution's reach + 1 (measure's masked-neighbour flag).
int64_t tiling_halo_for(const std::string& pipeline) {
  return pipeline == "global" ? 1 : pipeline == "convolve8" ? 4 : pipeline == "filtered" ? 2 : 8;
}

RunSummary run_tiled(const std::string& yaml, const fs::path& in, const fs::path& out, int64_t tile, int threads = 2) {
  Pipeline pipeline = test::pipeline_from(yaml);
  pipeline.input.dir = in;
  pipeline.output.dir = out;
  pipeline.engine.device = "cpu";
  pipeline.engine.threads = threads;
  pipeline.tiling.size = tile;
  pipeline.tiling.explicit_size = true;
  return run_pipeline(pipeline, {});
}
}  // namespace

TEST_CASE("tiled runs equal whole-image runs", "[tiling][engine]") {
  test::TempDir dir("tiling_engine");
  make_inputs(dir / "in");
  const std::vector<std::pair<std::string, std::string>> pipelines = {
      {"global", "output: {formats: [csv, labels, bgsub]}\nsteps: [background, segment, label, measure]\n"},
      {"convolve8", "output: {formats: [csv, labels, bgsub, fits_image]}\n"
                    "steps: [{convolve: {size: 7, sigma: 1.5}}, background, {segment: {nsigma: 3}},"
                    " {label: {connectivity: 8}}, measure]\n"},
      {"filtered", "output: {formats: [csv, labels, bgsub]}\n"  // the filter after the background (FILTER Y)
                   "steps: [background, {convolve: {kernel: [[1, 2, 1], [2, 4, 2], [1, 2, 1]], arithmetic: sep}},"
                   " {segment: {nsigma: 3}}, {label: {connectivity: 8}}, measure]\n"},
      {"lesson", "output: {formats: [csv, labels]}\n"
                 "steps: [{convolve: {kernel: lesson, apply_to: image}}, background, segment, label, measure]\n"},
  };
  for (const auto& [name, yaml] : pipelines) {
    const fs::path whole = dir / (name + "-whole");
    const RunSummary reference = run_tiled(yaml, dir / "in", whole, 0);
    REQUIRE(reference.failed() == 0);
    const auto reference_records = records(reference);
    for (int64_t tile : {64, 50, 37, 8, 4096}) {
      INFO("pipeline " << name << ", tile " << tile);
      const fs::path out = dir / (name + "-" + std::to_string(tile));
      const RunSummary tiled = run_tiled(yaml, dir / "in", out, tile);
      REQUIRE(tiled.failed() == 0);
      CHECK(tiled.items() == reference.items());
      for (const auto& [key, record] : records(tiled)) {
        INFO(key);
        const nlohmann::json& expected = reference_records.at(key);
        CHECK(record["nsources"] == expected["nsources"]);
        CHECK(record["width"] == expected["width"]);
        CHECK(record["background"]["median"] == expected["background"]["median"]);
        CHECK(record["background"]["iterations"] == expected["background"]["iterations"]);
        CHECK(record["background"]["kept"] == expected["background"]["kept"]);
        CHECK(std::abs(record["background"]["std"].get<double>() - expected["background"]["std"].get<double>()) <=
              1e-9 * expected["background"]["std"].get<double>());
        const bool small = key.rfind("small", 0) == 0;
        CHECK(record.contains("tiles") == (tile < (small ? 40 : 230)));  // tiled when larger than a tile
        if (record.contains("tiles")) CHECK(record["tiles"]["halo"] == tiling_halo_for(name));
      }
      for (const auto& entry : fs::directory_iterator(whole)) {
        const std::string file = entry.path().filename().string();
        if (file == "summary.json" || file == "manifest.jsonl" || file == "catalog.csv") continue;
        INFO(file);
        REQUIRE(fs::exists(out / file));
        if (file.ends_with(".cat.csv")) {
          check_same_catalog(entry.path(), out / file);
        } else {
          check_same_fits_file(entry.path(), out / file);  // label maps, bgsub, images
        }
      }
    }
  }
}

// The pre-pass convolves tiles in parallel with one reusable work item per thread; convolve's own
// parallel loop must not let a thread start another tile on that same item (tile_prepass.cpp
// isolates each tile). Before the fix, runs like these gave a different catalog from run to run.
TEST_CASE("tiled runs with convolve are the whole-image run every time, with more threads than cores",
          "[tiling][engine]") {
  test::TempDir dir("tiling_prepass_race");
  fs::create_directories(dir / "in");
  const int width = 1100, height = 900;
  test::write_fits(dir / "in" / "big.fits", -32, {width, height}, border_field(width, height, 21));
  const std::string yaml = "output: {formats: [csv]}\n"
                           "steps: [{convolve: {size: 9, sigma: 2.0}}, background, segment, label, measure]\n";
  const RunSummary whole = run_tiled(yaml, dir / "in", dir / "whole", 0, 8);
  REQUIRE(whole.failed() == 0);
  for (int repeat = 0; repeat < 8; ++repeat) {
    INFO("repeat " << repeat);
    const fs::path out = dir / ("tiled-" + std::to_string(repeat));
    const RunSummary tiled = run_tiled(yaml, dir / "in", out, 48, 8);
    REQUIRE(tiled.failed() == 0);
    check_same_catalog(dir / "whole" / "big.cat.csv", out / "big.cat.csv");
  }
}

TEST_CASE("a region read equals the same region of the whole plane", "[tiling][fits]") {
  test::TempDir dir("tiling_region");
  make_inputs(dir.path());
  std::vector<double> cube;
  for (int p = 0; p < 3; ++p) {
    auto plane = test::star_field(70, 50, 30 + p);
    cube.insert(cube.end(), plane.begin(), plane.end());
  }
  test::write_fits(dir / "cube.fits", -32, {70, 50, 3}, cube);
  struct Case {
    std::string file;
    int hdu;
    int64_t plane;
  };
  for (const Case& c : {Case{"field.fits", 0, 0}, Case{"int16.fits", 0, 0}, Case{"rice.fits.fz", 1, 0}, Case{"cube.fits", 0, 2}}) {
    INFO(c.file);
    ImageBuffer whole, region;
    read_fits_plane(dir / c.file, c.hdu, c.plane, whole);
    for (const TileRect rect : {TileRect{0, 0, 8, 8}, TileRect{13, 7, 40, 29}, TileRect{whole.width() - 5, whole.height() - 3, 5, 3},
                                TileRect{0, 0, whole.width(), whole.height()}}) {
      const int64_t bytes = read_fits_region(dir / c.file, c.hdu, c.plane, rect, region);
      REQUIRE(region.width() == rect.width);
      REQUIRE(region.height() == rect.height);
      CHECK(bytes == rect.size() * (c.file == "field.fits" || c.file == "cube.fits" ? 4 : c.file == "rice.fits.fz" ? 4 : 2));
      int64_t mismatches = 0;
      for (int64_t y = 0; y < rect.height; ++y)
        for (int64_t x = 0; x < rect.width; ++x) {
          const float a = whole.view()(rect.x + x, rect.y + y), b = region.view()(x, y);
          if (!(a == b || (std::isnan(a) && std::isnan(b)))) ++mismatches;
        }
      CHECK(mismatches == 0);
    }
    CHECK_THROWS_AS(read_fits_region(dir / c.file, c.hdu, c.plane, TileRect{whole.width() - 2, 0, 5, 5}, region), InputError);
    ReadLimits limits;
    limits.max_pixels = 100;
    CHECK_THROWS_WITH(read_fits_region(dir / c.file, c.hdu, c.plane, TileRect{0, 0, 20, 20}, region, limits),
                      Catch::Contains("exceeds the limit"));
  }
}

TEST_CASE("tiling settings: defaults, what cannot be tiled, halo", "[tiling][config]") {
  Pipeline pipeline = test::pipeline_from("steps: [background, segment, label, measure]\n");
  CHECK(pipeline.tiling.size == 4096);
  CHECK(pipeline.tiling.halo == -1);
  CHECK_FALSE(pipeline.tiling.explicit_size);
  TilingPlan plan = plan_tiling(pipeline);
  CHECK(plan.size == 4096);
  CHECK(plan.halo == 1);
  CHECK(plan.connectivity == 4);
  CHECK(pipeline.resolved()["tiling"]["halo"].as<std::string>() == "auto");

  pipeline = test::pipeline_from("tiling: {size: 512, halo: 6}\nsteps: [{convolve: {size: 9}}, background, segment, {label: {connectivity: 8}}]\n");
  plan = plan_tiling(pipeline);
  CHECK(plan.size == 512);
  CHECK(plan.halo == 6);
  CHECK(plan.connectivity == 8);
  CHECK(required_halo(pipeline) == 4);

  CHECK_THROWS_WITH(test::pipeline_from("tiling: {halo: 2}\nsteps: [{convolve: {kernel: lesson}}, background, segment, label, measure]\n"),
                    Catch::Contains("tiling.halo: 2 is smaller than the 8 pixels"));
  CHECK_THROWS_WITH(test::pipeline_from("tiling: {size: 4}\nsteps: [background]\n"), Catch::Contains("at least 8"));
  CHECK_THROWS_WITH(test::pipeline_from("tiling: {halo: -3}\nsteps: [background]\n"), Catch::Contains("auto or a number"));
  CHECK_THROWS_WITH(test::pipeline_from("tiling: {sise: 4}\nsteps: [background]\n"), Catch::Contains("unknown key"));
  // Explicit tiling of what cannot run on tiles is an error; by default such a pipeline is not tiled.
  CHECK_THROWS_WITH(test::pipeline_from("tiling: {size: 1024}\nsteps: [{background: {method: mesh}}, segment, label, measure]\n"),
                    Catch::Contains("method: mesh is not supported on tiles"));
  CHECK_THROWS_WITH(test::pipeline_from("tiling: {size: 1024}\nsteps: [{convolve: {mode: full, apply_to: image}}, background]\n"),
                    Catch::Contains("mode: full"));
  CHECK_THROWS_WITH(test::pipeline_from("tiling: {size: 1024}\nsteps: [normalize]\n"), Catch::Contains("whole images only"));
  pipeline = test::pipeline_from("steps: [{background: {method: mesh}}, segment, label, measure]\n");
  plan = plan_tiling(pipeline);
  CHECK(plan.size == 0);
  CHECK_FALSE(plan.off_reason.empty());
  CHECK(plan_tiling(test::pipeline_from("tiling: {size: 0}\nsteps: [normalize]\n")).size == 0);
  // Only a size given asks for tiles: the other tiling keys leave such a pipeline whole.
  CHECK_FALSE(plan_tiling(test::pipeline_from("tiling: {resident: off}\nsteps: [{background: {method: mesh}}]\n")).off_reason.empty());
}

TEST_CASE("tiling.resident: auto only with catalog outputs; strips of about a tile", "[tiling][config]") {
  Pipeline pipeline = test::pipeline_from("output: {formats: [csv, fits]}\nsteps: [background, segment, label, measure]\n");
  CHECK(pipeline.tiling.resident);
  CHECK(plan_tiling(pipeline).resident);
  CHECK(pipeline.resolved()["tiling"]["resident"].as<std::string>() == "auto");
  pipeline = test::pipeline_from("tiling: {resident: off}\noutput: {formats: [csv]}\nsteps: [background, segment, label, measure]\n");
  CHECK_FALSE(pipeline.tiling.resident);
  CHECK_FALSE(plan_tiling(pipeline).resident);
  CHECK(pipeline.resolved()["tiling"]["resident"].as<std::string>() == "off");
  CHECK(test::pipeline_from("tiling: {resident: auto}\nsteps: [background]\n").tiling.resident);
  // An image output would need the whole image on the host: such runs use tiles.
  const TilingPlan labels = plan_tiling(test::pipeline_from("output: {formats: [csv, labels]}\nsteps: [background, segment, label, measure]\n"));
  CHECK(labels.size == 4096);
  CHECK_FALSE(labels.resident);
  CHECK_THAT(labels.resident_off_reason, Catch::Contains("labels"));
  CHECK_THROWS_WITH(test::pipeline_from("tiling: {resident: maybe}\nsteps: [background]\n"), Catch::Contains("auto or off"));
  // A pipeline that cannot run on tiles: large planes are whole, GPU-resident when they fit, with
  // the GPU memory deblending and the mesh maps need per pixel.
  const TilingPlan deblend = plan_tiling(test::pipeline_from(
      "output: {formats: [csv, ldac]}\nsteps: [{background: {method: mesh}}, {segment: {compare: float32}}, "
      "{label: {connectivity: 8}}, deblend, measure]\n"));
  CHECK(deblend.size == 0);
  CHECK(deblend.whole_above == 4096);
  CHECK_THAT(deblend.off_reason, Catch::Contains("mesh"));
  CHECK(deblend.resident);
  CHECK(deblend.resident_bytes_per_pixel == 48 + 64 + 16);
  CHECK(plan_tiling(pipeline).resident_bytes_per_pixel == 48);
  // Strips of whole rows, about size^2 pixels, at least one row, at most the image.
  CHECK(resident_strip_rows(4096, 32000, 32000) == 131);  // 4 Mi pixels at most
  CHECK(resident_strip_rows(1024, 32000, 32000) == 32);
  CHECK(resident_strip_rows(64, 100, 70) == 40);
  CHECK(resident_strip_rows(8, 1000, 70) == 1);
  CHECK(resident_strip_rows(4096, 100, 70) == 70);
}

TEST_CASE("the tile grid covers the image once", "[tiling]") {
  for (const auto& [w, h, size] : {std::tuple{100, 70, 32}, std::tuple{64, 64, 64}, std::tuple{65, 9, 8}}) {
    TileGrid grid{w, h, size, 3};
    std::vector<int> covered(static_cast<size_t>(w * h), 0);
    for (int64_t t = 0; t < grid.count(); ++t) {
      const TileRect core = grid.core(t), halo = grid.halo_rect(t);
      CHECK(halo.x == std::max<int64_t>(0, core.x - 3));
      CHECK(halo.x_end() == std::min<int64_t>(w, core.x_end() + 3));
      for (int64_t y = core.y; y < core.y_end(); ++y)
        for (int64_t x = core.x; x < core.x_end(); ++x) ++covered[static_cast<size_t>(y * w + x)];
    }
    CHECK(std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; }));
  }
}

TEST_CASE("a tile beyond input.max_pixels fails its image as a tile, before the pre-pass reads", "[tiling][engine]") {
  test::TempDir dir("tiling_max_pixels");
  fs::create_directories(dir / "in");
  test::write_fits(dir / "in" / "wide.fits", -32, {600, 40}, std::vector<double>(600 * 40, 1.0));
  // Tiles of 300 with a halo of 1: 301 x 40 read per tile (the halo ends at the image edge); the
  // pre-pass reads strips of 300 x 40, within the limit.
  Pipeline pipeline = test::pipeline_from("input: {max_pixels: 12000}\noutput: {formats: [csv]}\nsteps: [background, segment, label, measure]\n");
  pipeline.input.dir = dir / "in";
  pipeline.output.dir = dir / "out";
  pipeline.engine.device = "cpu";
  pipeline.tiling.size = 300;
  pipeline.tiling.explicit_size = true;
  const RunSummary summary = run_pipeline(pipeline, {});
  REQUIRE(summary.failed() == 1);
  const std::string error = records(summary).begin()->second["error"].get<std::string>();
  CHECK_THAT(error, Catch::Contains("a tile of 301x40 pixels with its halo exceeds input.max_pixels (12000)"));
}

TEST_CASE("float64 pixels beyond float32's range are warned about once per tiled image, each counted once",
          "[tiling][engine]") {
  test::TempDir dir("tiling_float_range");
  fs::create_directories(dir / "in");
  std::vector<double> values = border_field(230, 190, 5);
  for (const int64_t at : {int64_t{0}, int64_t{64 * 230 + 63}, int64_t{64 * 230 + 64}, int64_t{189 * 230 + 229}}) {
    values[static_cast<size_t>(at)] = 1e300;  // on tile corners: inside other tiles' halos too
  }
  test::write_fits(dir / "in" / "deep.fits", -64, {230, 190}, values);
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  const RunSummary summary =
      run_tiled("output: {formats: [csv]}\nsteps: [{convolve: {size: 5, sigma: 1.0}}, background, segment, label, measure]\n",
                dir / "in", dir / "out", 64);
  spdlog::set_default_logger(previous);
  REQUIRE(summary.failed() == 0);
  std::vector<std::string> warnings;
  for (const std::string& line : sink->last_formatted()) {
    if (line.find("beyond float32's range") != std::string::npos) warnings.push_back(line);
  }
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("deep.fits: HDU 0 plane 0: 4 pixel(s)"));
}
