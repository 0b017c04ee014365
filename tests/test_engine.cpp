// The flow graph end to end: a directory mixing good images, a cube, a multi-extension file
// and bad files; every good item processed correctly, every bad one reported, any thread count.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/kernels/background.hpp"
#include "imflow/kernels/background_mesh.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
size_t count_lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

void make_mixed_inputs(const std::filesystem::path& in) {
  std::filesystem::create_directories(in / "night2");
  for (int i = 0; i < 6; ++i) test::write_fits(in / ("field" + std::to_string(i) + ".fits"), -32, {96, 80}, test::star_field(96, 80, i));
  test::write_fits(in / "night2" / "cube.fits", 16, {64, 64, 3},
                   [] {
                     std::vector<double> v;
                     for (int p = 0; p < 3; ++p) {
                       auto plane = test::star_field(64, 64, 100 + p);
                       v.insert(v.end(), plane.begin(), plane.end());
                     }
                     return v;
                   }());
  test::write_empty_primary(in / "mef.fits");
  test::write_fits(in / "mef.fits", -32, {50, 40}, test::star_field(50, 40, 7), 1, 0, nullptr, false);
  std::ofstream(in / "notes.fits") << "SIMPLE  = nonsense\n";
  std::ofstream(in / "zero.fits").close();
  test::write_fits(in / "truncated.fits", -32, {300, 300}, std::vector<double>(90000, 1.0));
  std::filesystem::resize_file(in / "truncated.fits", 5760);
  test::write_fits(in / "constant.fits", -32, {32, 32}, std::vector<double>(1024, 5.0));
}

Pipeline make_pipeline(const std::filesystem::path& in, const std::filesystem::path& out, int threads, int buffers) {
  Pipeline pipeline = test::pipeline_from(
      "input: {recursive: true}\n"
      "output: {formats: [csv, fits, labels, bgsub]}\n"
      "device: cpu\n"
      "steps: [background, segment, label, measure]\n");
  pipeline.input.dir = in;
  pipeline.output.dir = out;
  pipeline.engine.threads = threads;
  pipeline.engine.buffers = buffers;
  return pipeline;
}
// The trace's parts of the read and write stages, each inside its stage's event (same track, same
// item, within its interval) with its CPU time; every good item has each part once.
void check_trace_parts(const std::filesystem::path& path) {
  const nlohmann::json trace = nlohmann::json::parse(test::read_text(path));
  const std::map<std::string, std::string> stage_of = {
      {"fits header", "read"},  {"fits pixels", "read"},   {"wcs", "write"},          {"sky positions", "write"},
      {"catalog csv", "write"}, {"catalog fits", "write"}, {"labels image", "write"}, {"bgsub image", "write"}};
  std::map<std::string, int> parts;
  for (const auto& event : trace["traceEvents"]) {
    const auto found = stage_of.find(event.value("name", ""));
    if (event["ph"] != "X" || found == stage_of.end()) continue;
    INFO(event.dump());
    const double start = event["ts"], end = start + event["dur"].get<double>();
    int enclosing = 0;
    for (const auto& stage : trace["traceEvents"]) {
      if (stage["ph"] != "X" || stage["name"] != found->second || stage["tid"] != event["tid"] ||
          stage["args"]["item"] != event["args"]["item"]) {
        continue;
      }
      const double stage_start = stage["ts"];
      enclosing += stage_start <= start && end <= stage_start + stage["dur"].get<double>();
    }
    CHECK(enclosing == 1);
    // The thread's CPU time in the part: at most its wall time (the two clocks read a moment apart).
    const double cpu_us = event["args"]["cpu_us"];
    CHECK(cpu_us >= 0.0);
    CHECK(cpu_us <= event["dur"].get<double>() + 100.0);
    ++parts[found->first];
  }
  // 11 good items (the scan turns the bad files away before any read).
  for (const char* part :
       {"fits header", "fits pixels", "wcs", "sky positions", "catalog csv", "catalog fits", "labels image", "bgsub image"}) {
    INFO(part);
    CHECK(parts[part] == 11);
  }
}
}  // namespace

TEST_CASE("a mixed directory: good items processed, bad ones reported, the rest carries on", "[engine]") {
  test::TempDir dir("engine_mixed");
  make_mixed_inputs(dir / "in");
  for (auto [threads, buffers] : {std::pair{1, 1}, std::pair{4, 3}}) {
    INFO("threads " << threads << " buffers " << buffers);
    const auto out = dir / ("out" + std::to_string(threads));
    RunOptions options;
    options.trace_path = dir / ("trace" + std::to_string(threads) + ".json");
    const RunSummary summary = run_pipeline(make_pipeline(dir / "in", out, threads, buffers), options);
    // 6 fields + 3 cube planes + 1 MEF extension + 1 constant = 11 good; 3 bad files.
    CHECK(summary.succeeded() == 11);
    CHECK(summary.failed() == 3);
    const nlohmann::json json = nlohmann::json::parse(test::read_text(out / "summary.json"));
    CHECK(json["totals"]["failed"] == 3);
    std::set<std::string> failed;
    for (const auto& item : json["items"]) {
      if (item["status"] == "failed") {
        const std::string file = item["file"];
        const std::string error = item["error"];
        CHECK(error.find(std::filesystem::path(file).filename().string()) != std::string::npos);
        failed.insert(std::filesystem::path(file).filename().string());
      }
    }
    CHECK(failed == std::set<std::string>{"notes.fits", "zero.fits", "truncated.fits"});
    // Outputs mirror the input tree; cube planes and extensions are named apart.
    CHECK(std::filesystem::exists(out / "night2" / "cube.p2.cat.csv"));
    CHECK(std::filesystem::exists(out / "mef.hdu1.cat.fits"));
    CHECK(std::filesystem::exists(out / "field3.labels.fits"));
    CHECK(std::filesystem::exists(out / "field3.bgsub.fits"));
    CHECK(!std::filesystem::exists(out / "notes.cat.csv"));
    // The constant image is processed: std 0, no sources.
    CHECK(count_lines(test::read_text(out / "constant.cat.csv")) == 1);
    // The catalog equals the steps run directly on the image.
    ImageBuffer image;
    read_fits_plane(dir / "in" / "field3.fits", 0, 0, image);
    std::vector<float> work;
    const auto stats = kernels::kappa_sigma_clip(image.view(), 3.0, 100, work);
    for (const auto& item : json["items"]) {
      if (item["file"].get<std::string>().find("field3") != std::string::npos) {
        CHECK(item["background"]["median"].get<double>() == stats.median);
        CHECK(item["nsources"].get<int>() + 1 == static_cast<int>(count_lines(test::read_text(out / "field3.cat.csv"))));
        CHECK(item["nsources"].get<int>() >= 1);
      }
    }
    CHECK(std::filesystem::exists(options.trace_path));
    check_trace_parts(options.trace_path);
  }
  // Both runs wrote identical catalogs.
  for (const char* name : {"field0.cat.csv", "night2/cube.p1.cat.csv", "mef.hdu1.cat.csv"}) {
    CHECK(test::read_text(dir / "out1" / name) == test::read_text(dir / "out4" / name));
  }
}

TEST_CASE("OUT/catalog.csv holds every item's rows, and output.merged_catalog: false leaves it out", "[engine]") {
  test::TempDir dir("engine_merged_catalog");
  std::filesystem::create_directories(dir / "in");
  for (int i = 0; i < 4; ++i) test::write_fits(dir / "in" / ("f" + std::to_string(i) + ".fits"), -32, {64, 48}, test::star_field(64, 48, i));
  for (bool merged : {true, false}) {
    INFO("merged_catalog " << merged);
    const auto out = dir / (merged ? "merged" : "apart");
    Pipeline pipeline = make_pipeline(dir / "in", out, 2, 0);
    pipeline.output.merged_catalog = merged;
    const RunSummary summary = run_pipeline(pipeline, {});
    REQUIRE(summary.succeeded() == 4);
    size_t rows = 0;
    for (int i = 0; i < 4; ++i) rows += count_lines(test::read_text(out / ("f" + std::to_string(i) + ".cat.csv"))) - 1;
    REQUIRE(rows >= 4);
    CHECK(std::filesystem::exists(out / "catalog.csv") == merged);
    if (merged) CHECK(count_lines(test::read_text(out / "catalog.csv")) == rows + 1);
  }
}

TEST_CASE("fail_fast stops taking new items after the first failure", "[engine]") {
  test::TempDir dir("engine_failfast");
  std::filesystem::create_directories(dir / "in");
  std::ofstream(dir / "in" / "a_bad.fits") << "garbage";
  for (int i = 0; i < 20; ++i) test::write_fits(dir / "in" / ("b" + std::to_string(i) + ".fits"), -32, {16, 16}, test::star_field(16, 16, i, 1));
  Pipeline pipeline = make_pipeline(dir / "in", dir / "out", 1, 1);
  pipeline.engine.fail_fast = true;
  const RunSummary summary = run_pipeline(pipeline, {});
  CHECK(summary.failed() == 1);
  CHECK(summary.items() < 21);
  // The summary says why the rest was not processed (the exit code stays 2: an item failed).
  const nlohmann::json json = summary.to_json();
  REQUIRE(json.contains("fail_fast"));
  CHECK(json["fail_fast"]["stopped_after"].get<std::string>().find("a_bad.fits") != std::string::npos);
  CHECK(summary.stop_reason().empty());
}

TEST_CASE("a missing or empty input directory or device cuda without CUDA stop the run", "[engine]") {
  test::TempDir dir("engine_missing");
  Pipeline pipeline = make_pipeline(dir / "nope", dir / "out", 1, 1);
  CHECK_THROWS_AS(run_pipeline(pipeline, {}), InputError);  // exit 3: the run cannot start
  CHECK_THROWS_WITH(run_pipeline(pipeline, {}), Catch::Contains("no such input file or directory"));
  std::filesystem::create_directories(dir / "empty");
  pipeline.input.dir = dir / "empty";
  CHECK_THROWS_WITH(run_pipeline(pipeline, {}), Catch::Contains("no input file matches the patterns"));
#ifndef IMFLOW_HAVE_CUDA
  pipeline.engine.device = "cuda";
  CHECK_THROWS_WITH(run_pipeline(pipeline, {}), Catch::Contains("without CUDA"));
  bool config_error = false;  // a valid pipeline the machine cannot run: exit 3, not 1
  try {
    run_pipeline(pipeline, {});
  } catch (const ConfigError&) {
    config_error = true;
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(config_error);
#endif
}

TEST_CASE("an output directory inside the input is refused before anything is created there", "[engine]") {
  test::TempDir dir("engine_output_inside");
  std::filesystem::create_directories(dir / "in");
  test::write_fits(dir / "in" / "a.fits", -32, {40, 30}, test::star_field(40, 30, 3));
  Pipeline pipeline = make_pipeline(dir / "in", dir / "in" / "x" / "out", 1, 1);
  CHECK_THROWS_WITH(run_pipeline(pipeline, {}), Catch::Contains("is (or is inside) the input directory"));
  CHECK_FALSE(std::filesystem::exists(dir / "in" / "x"));
}

TEST_CASE("input.extnames keeps the SCI HDUs only; their outputs record the EXTNAME", "[engine]") {
  test::TempDir dir("engine_extnames");
  std::filesystem::create_directories(dir / "in");
  const auto mef = dir / "in" / "hst.fits";
  test::write_empty_primary(mef);
  test::write_fits(mef, -32, {60, 50}, test::star_field(60, 50, 11), 1, 0, nullptr, false);
  test::name_last_hdu(mef, "SCI");
  test::write_fits(mef, -32, {60, 50}, test::star_field(60, 50, 12), 1, 0, nullptr, false);
  test::name_last_hdu(mef, "ERR");
  Pipeline pipeline = make_pipeline(dir / "in", dir / "out", 2, 4);
  pipeline.output.formats = {"csv", "fits"};
  pipeline.input.extnames = {"SCI"};
  const RunSummary summary = run_pipeline(pipeline, {});
  CHECK(summary.failed() == 0);
  CHECK(summary.items() == 1);
  CHECK(std::filesystem::exists(dir / "out" / "hst.hdu1.cat.csv"));
  CHECK_FALSE(std::filesystem::exists(dir / "out" / "hst.hdu2.cat.csv"));
  fitsfile* file = nullptr;
  int status = 0;
  char extname[FLEN_VALUE] = {0};
  fits_open_file(&file, (dir / "out" / "hst.hdu1.cat.fits").c_str(), READONLY, &status);
  fits_movabs_hdu(file, 2, nullptr, &status);
  fits_read_key(file, TSTRING, "SRCEXT", extname, nullptr, &status);
  fits_close_file(file, &status);
  CHECK(status == 0);
  CHECK(std::string(extname) == "SCI");
}

TEST_CASE("bgsub subtracts the mesh background's map (the global median without a mesh); no catalog, no sky positions", "[engine]") {
  test::TempDir dir("engine_bgsub_mesh");
  std::vector<double> sky = test::star_field(150, 100, 3);
  for (int64_t y = 0; y < 100; ++y)
    for (int64_t x = 0; x < 150; ++x) sky[y * 150 + x] += 0.2 * x - 0.1 * y;  // a gradient
  std::filesystem::create_directories(dir / "in");
  test::write_fits(dir / "in" / "sky.fits", -32, {150, 100}, sky);
  Pipeline pipeline = test::pipeline_from(
      "output: {formats: [bgsub]}\n"
      "device: cpu\n"
      "steps: [{background: {method: mesh, size: 32, filter_size: 3}}, segment, label, measure]\n");
  pipeline.input.dir = dir / "in";
  pipeline.output.dir = dir / "out";
  RunOptions options;
  options.trace_path = dir / "trace.json";
  REQUIRE(run_pipeline(pipeline, options).failed() == 0);
  // No catalog file wanted: the writer makes no sky positions and writes no catalog.
  const nlohmann::json trace = nlohmann::json::parse(test::read_text(dir / "trace.json"));
  int bgsub_parts = 0, sky_parts = 0;
  for (const auto& event : trace["traceEvents"]) {
    bgsub_parts += event.value("name", "") == "bgsub image";
    sky_parts += event.value("name", "") == "sky positions";
  }
  CHECK(bgsub_parts == 1);
  CHECK(sky_parts == 0);
  CHECK_FALSE(std::filesystem::exists(dir / "out" / "sky.cat.csv"));
  CHECK_FALSE(std::filesystem::exists(dir / "out" / "sky.cat.fits"));
  ImageBuffer image, written;
  read_fits_plane(dir / "in" / "sky.fits", 0, 0, image);
  read_fits_plane(dir / "out" / "sky.bgsub.fits", 0, 0, written);
  std::vector<float> back, rms;
  kernels::MeshParams params;
  params.mesh_width = params.mesh_height = 32;
  kernels::mesh_background(image.view(), params, back, rms);
  REQUIRE(written.size() == image.size());
  int64_t differences = 0;
  for (int64_t i = 0; i < image.size(); ++i) differences += written.data()[i] != image.data()[i] - back[i];
  CHECK(differences == 0);
  // The map is not flat here: a single level would not have given the same image.
  CHECK(*std::max_element(back.begin(), back.end()) - *std::min_element(back.begin(), back.end()) > 10.0f);
}

TEST_CASE("file names with CFITSIO's extended-syntax characters are read and written as they are", "[engine]") {
  // fits_create_file read "m31[r].cat.fits" as file "m31" + an extension spec (error 125).
  test::TempDir dir("engine_odd_names");
  std::filesystem::create_directories(dir / "in");
  const std::vector<std::string> names = {"m31[r].fits", "ngc(1)+x.fits", "a{b}.fits"};
  for (size_t i = 0; i < names.size(); ++i) {
    test::write_fits(dir / "in" / "plain.fits", -32, {64, 48}, test::star_field(64, 48, 30 + static_cast<int>(i)));
    std::filesystem::rename(dir / "in" / "plain.fits", dir / "in" / names[i]);
  }
  Pipeline pipeline = make_pipeline(dir / "in", dir / "out", 2, 4);
  const RunSummary summary = run_pipeline(pipeline, {});
  CHECK(summary.failed() == 0);
  CHECK(summary.items() == 3);
  for (const char* stem : {"m31[r]", "ngc(1)+x", "a{b}"}) {
    for (const char* suffix : {".cat.csv", ".cat.fits", ".labels.fits", ".bgsub.fits"}) {
      INFO(stem << suffix);
      CHECK(std::filesystem::exists(dir / "out" / (std::string(stem) + suffix)));
    }
  }
}

TEST_CASE("an item whose later output fails keeps none of its outputs; the others are untouched", "[engine]") {
  test::TempDir dir("engine_all_or_none");
  std::filesystem::create_directories(dir / "in");
  for (int i = 0; i < 2; ++i) test::write_fits(dir / "in" / ("f" + std::to_string(i) + ".fits"), -32, {64, 48}, test::star_field(64, 48, 40 + i));
  // A directory where f1's FITS catalog goes: its rename fails after the CSV catalog was written.
  std::filesystem::create_directories(dir / "out" / "f1.cat.fits" / "x");
  Pipeline pipeline = make_pipeline(dir / "in", dir / "out", 2, 4);
  pipeline.output.formats = {"csv", "fits"};
  const RunSummary summary = run_pipeline(pipeline, {});
  CHECK(summary.items() == 2);
  CHECK(summary.failed() == 1);
  CHECK(std::filesystem::exists(dir / "out" / "f0.cat.csv"));
  CHECK(std::filesystem::exists(dir / "out" / "f0.cat.fits"));
  CHECK_FALSE(std::filesystem::exists(dir / "out" / "f1.cat.csv"));
  CHECK(std::filesystem::is_directory(dir / "out" / "f1.cat.fits" / "x"));  // not ours: left as it was
  for (const auto& entry : std::filesystem::directory_iterator(dir / "out")) {
    CHECK(entry.path().filename().string().find(".tmp-") == std::string::npos);  // no temporary left behind
  }
}

TEST_CASE("a plane whose background noise is 0 is processed with a warning naming it", "[engine]") {
  test::TempDir dir("engine_zero_noise");
  std::filesystem::create_directories(dir / "in");
  // A data-quality plane: zeros with a few flagged pixels. The clipped std is 0, the threshold is
  // the median (0) and every flagged pixel becomes a source.
  std::vector<double> quality(64 * 48, 0.0);
  for (int i = 0; i < 30; ++i) quality[static_cast<size_t>(i * 97 + 13)] = i % 2 == 0 ? 4.0 : 16.0;
  test::write_fits(dir / "in" / "dq.fits", 16, {64, 48}, quality);
  test::write_fits(dir / "in" / "sky.fits", -32, {64, 48}, test::star_field(64, 48, 5));
  Pipeline pipeline = make_pipeline(dir / "in", dir / "out", 2, 4);
  pipeline.output.formats = {"csv"};
  const bool tiled = GENERATE(false, true);  // in 32-pixel tiles the image's record says it too
  pipeline.tiling.size = tiled ? 32 : 0;
  pipeline.tiling.explicit_size = tiled;
  REQUIRE(run_pipeline(pipeline, {}).failed() == 0);
  const nlohmann::json json = nlohmann::json::parse(test::read_text(dir / "out" / "summary.json"));
  for (const auto& item : json["items"]) {
    INFO("tiled " << tiled);
    CHECK(item.contains("tiles") == tiled);
    const bool dq = item["file"].get<std::string>().find("dq.fits") != std::string::npos;
    CHECK(item.contains("warnings") == dq);
    if (!dq) continue;
    CHECK(item["background"]["std"].get<double>() == 0.0);
    CHECK(item["nsources"].get<int>() == 30);
    REQUIRE(item["warnings"].size() == 1);
    CHECK_THAT(item["warnings"][0].get<std::string>(), Catch::Contains("noise estimate is 0"));
  }
}
