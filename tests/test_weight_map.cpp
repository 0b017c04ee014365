// Weight maps beside the images (input.weight): the companion naming rule and its errors, the
// weight map as the per-pixel noise of detection and errors, SExtractor's rescaling, bad pixels.
#include <catch2/catch.hpp>

#include <cmath>
#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/in_memory.hpp"
#include "imflow/io/companion.hpp"
#include "imflow/kernels/background_mesh.hpp"
#include "imflow/kernels/weight_scale.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
constexpr const char* kWeightPipeline =
    "device: cpu\n"
    "output: {formats: [csv]}\n"
    "input: {weight: {image: '{stem}.weight.fits', type: map_weight}}\n"
    "steps:\n"
    "  - background: {method: mesh, size: 32}\n"
    "  - segment: {nsigma: 5, relative_to: rms_map}\n"
    "  - label: {connectivity: 8}\n"
    "  - measure\n";

Pipeline weight_pipeline(const std::filesystem::path& in, const std::filesystem::path& out, const std::string& yaml = kWeightPipeline) {
  Pipeline pipeline = test::pipeline_from(yaml);
  pipeline.input.dir = in;
  pipeline.output.dir = out;
  pipeline.engine.threads = 2;
  return pipeline;
}

// The global background at 5 sigma, 8-connected, measure; `input` (YAML) names the companions.
Pipeline global_pipeline(const std::filesystem::path& in, const std::filesystem::path& out, const std::string& input,
                         const std::string& formats) {
  return weight_pipeline(in, out,
                         "device: cpu\noutput: {formats: " + formats + "}\ninput: " + input +
                             "\nsteps: [background, {segment: {nsigma: 5}}, {label: {connectivity: 8}}, measure]\n");
}

// The summary's record of the item whose file name ends with `name`.
nlohmann::json record_of(const RunSummary& summary, const std::string& name) {
  const nlohmann::json json = summary.to_json();
  for (const auto& record : json["items"]) {
    const std::string file = record["file"].get<std::string>();
    if (file.size() >= name.size() && file.compare(file.size() - name.size(), name.size(), name) == 0) return record;
  }
  FAIL("no summary record for " << name);
  return {};
}

// Adds `value` to the 6x6 pixels from (x0, y0) of a 96-pixel-wide image.
void add_block(std::vector<double>& image, int x0, int y0, double value) {
  for (int y = y0; y < y0 + 6; ++y)
    for (int x = x0; x < x0 + 6; ++x) image[y * 96 + x] += value;
}

// Noise of sigma 5 on 100 (96x96) with two bright 6x6 blocks, from (20, 20) and (60, 20).
std::vector<double> two_blocks() {
  std::vector<double> field = test::star_field(96, 96, 8, 0);
  add_block(field, 20, 20, 500.0);
  add_block(field, 60, 20, 500.0);
  return field;
}

// A 128x128 field of noise sigma 5 on 100 with 8 stars, and a weight map 1/sigma^2 x `scale`
// (varying by 1% from pixel to pixel), 0 in the block x, y in [40, 60).
void write_field_and_weight(const std::filesystem::path& dir, const std::string& stem, double scale, bool hole = false) {
  test::write_fits(dir / (stem + ".fits"), -32, {128, 128}, test::star_field(128, 128, 3));
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> wobble(0.99, 1.01);
  std::vector<double> weight(128 * 128);
  for (int y = 0; y < 128; ++y) {
    for (int x = 0; x < 128; ++x) {
      const bool masked = hole && x >= 40 && x < 60 && y >= 40 && y < 60;
      weight[y * 128 + x] = masked ? 0.0 : scale / 25.0 * wobble(rng);
    }
  }
  test::write_fits(dir / (stem + ".weight.fits"), -32, {128, 128}, weight);
}
}  // namespace

TEST_CASE("the companion rule: {stem} patterns beside the image, EXTNAMEs of the same file", "[weight]") {
  const CompanionSpec pattern{"weight map", "{stem}.weight.fits"};
  CHECK(companion_file("/data/n1/x.fits", pattern) == "/data/n1/x.weight.fits");
  CHECK(companion_file("/data/n1/x.fits.fz", pattern) == "/data/n1/x.weight.fits");
  CHECK(companion_file("/data/x.fits", {"weight map", "../w/{stem}_wht.fits"}) == "/data/../w/x_wht.fits");
  CHECK(companion_file("/data/x.fits", {"weight map", "/maps/flat.fits"}) == "/maps/flat.fits");
  CHECK_FALSE(pattern.names_extension());
  CHECK(CompanionSpec{"weight map", "WHT"}.names_extension());
  CHECK_FALSE(CompanionSpec{"weight map", "wht.fits"}.names_extension());
  const std::vector<std::filesystem::path> listed = {"d/a.fits", "d/a.weight.fits", "d/b.fits", "d/c.weight.fits"};
  CHECK(without_companion_files(listed, {pattern}) ==
        std::vector<std::filesystem::path>{"d/a.fits", "d/b.fits", "d/c.weight.fits"});
}

TEST_CASE("an EXTNAME companion pairs the n-th SCI with the n-th WHT of the file", "[weight]") {
  test::TempDir dir("weight_extname");
  const auto mef = dir / "drz.fits";
  test::write_empty_primary(mef);
  for (const char* name : {"SCI", "WHT", "SCI", "WHT"}) {
    test::write_fits(mef, -32, {40, 30}, std::vector<double>(1200, 1.0), 1, 0, nullptr, false);
    test::name_last_hdu(mef, name);
  }
  ItemRef second_chip;
  second_chip.path = mef;
  second_chip.hdu = 3;
  second_chip.extname = "SCI";
  CHECK(locate_companion(second_chip, {"weight map", "WHT"}).hdu == 4);
  second_chip.hdu = 1;
  CHECK(locate_companion(second_chip, {"weight map", "wht"}).hdu == 2);
  try {
    locate_companion(second_chip, {"weight map", "ERR"});
    FAIL("no ERR HDU: expected an error");
  } catch (const InputError& error) {
    CHECK_THAT(error.what(), Catch::Contains("drz.fits[hdu 1]: its weight map (EXTNAME ERR) is not in the file"));
  }
}

TEST_CASE("a missing or mis-sized weight map fails its item naming both files; the batch carries on", "[weight]") {
  test::TempDir dir("weight_errors");
  const auto in = dir / "in";
  std::filesystem::create_directories(in);
  write_field_and_weight(in, "good", 1.0);
  test::write_fits(in / "lonely.fits", -32, {128, 128}, test::star_field(128, 128, 4));
  test::write_fits(in / "small.fits", -32, {128, 128}, test::star_field(128, 128, 5));
  test::write_fits(in / "small.weight.fits", -32, {64, 128}, std::vector<double>(64 * 128, 1.0));
  const RunSummary summary = run_pipeline(weight_pipeline(in, dir / "out"), {});
  CHECK(summary.items() == 3);  // the weight maps are not images of their own
  CHECK(summary.failed() == 2);
  CHECK(record_of(summary, "good.fits")["status"] == "ok");
  CHECK_THAT(record_of(summary, "lonely.fits")["error"].get<std::string>(),
             Catch::Contains("lonely.fits: its weight map " + (in / "lonely.weight.fits").string() + " does not exist"));
  CHECK_THAT(record_of(summary, "small.fits")["error"].get<std::string>(),
             Catch::Contains("small.fits: its weight map " + (in / "small.weight.fits").string() +
                             " is 64x128 pixels, the image 128x128"));
}

TEST_CASE("a weight map is rescaled to the measured noise and sets the threshold per pixel", "[weight]") {
  test::TempDir dir("weight_scale");
  const auto in = dir / "in";
  std::filesystem::create_directories(in);
  write_field_and_weight(in, "field", 16.0, true);  // weights 16x 1/sigma^2: SExtractor's factor is 4
  const RunSummary summary = run_pipeline(weight_pipeline(in, dir / "out"), {});
  REQUIRE(summary.failed() == 0);
  const nlohmann::json record = record_of(summary, "field.fits");
  CHECK(record["metrics"]["weight_scale"].get<double>() == Approx(4.0).epsilon(0.02));
  CHECK(record["metrics"]["weight_bad_pixels"].get<double>() == 400.0);

  // The same through the kernel: the image's noise over the map's.
  ImageBuffer image;
  read_fits_plane(in / "field.fits", 0, 0, image);
  ImageBuffer weight;
  read_fits_plane(in / "field.weight.fits", 0, 0, weight);
  std::vector<float> variance(static_cast<size_t>(weight.size()));
  for (int64_t i = 0; i < weight.size(); ++i) variance[i] = weight.data()[i] > 0 ? 1.0f / weight.data()[i] : INFINITY;
  kernels::MeshParams params;
  params.mesh_width = params.mesh_height = 32;
  const kernels::MeshGrid grid = kernels::mesh_grid(image.view(), params);
  const kernels::WeightScale scale = kernels::weight_scale(image.view(), variance.data(), params, grid);
  CHECK(scale.meshes == 16);
  CHECK(scale.factor == Approx(record["metrics"]["weight_scale"].get<double>()).epsilon(0.02));
}

TEST_CASE("pixels of zero weight are never detected; map_rms is used as it is", "[weight]") {
  test::TempDir dir("weight_bad_pixels");
  const auto in = dir / "in";
  std::filesystem::create_directories(in);
  std::vector<double> field = test::star_field(128, 128, 6, 0);
  std::vector<double> rms(field.size(), 5.0), weight(field.size(), 1.0 / 25.0);
  for (int y = 45; y < 55; ++y) {
    for (int x = 45; x < 55; ++x) {
      field[y * 128 + x] += 1000.0;  // a bright block in the hole of the weight map
      weight[y * 128 + x] = 0.0;
      rms[y * 128 + x] = 1e31;  // past SExtractor's BIG: a bad pixel of an RMS map
    }
  }
  for (int y = 95; y < 100; ++y) {
    for (int x = 95; x < 100; ++x) field[y * 128 + x] += 40.0;  // 8 sigma above the noise
  }
  test::write_fits(in / "f.fits", -32, {128, 128}, field);
  test::write_fits(in / "f.weight.fits", -32, {128, 128}, weight);
  test::write_fits(in / "f.rms.fits", -32, {128, 128}, rms);
  Catalog weighted, from_rms;
  for (const bool use_rms : {false, true}) {
    std::string yaml = kWeightPipeline;
    if (use_rms) yaml.replace(yaml.find("'{stem}.weight.fits', type: map_weight"), 38, "'{stem}.rms.fits', type: map_rms");
    Pipeline pipeline = weight_pipeline(in, dir / (use_rms ? "out_rms" : "out_w"), yaml);
    pipeline.input.patterns = {"f.fits"};
    const RunSummary summary = run_pipeline(pipeline, {});
    REQUIRE(summary.failed() == 0);
    const nlohmann::json record = record_of(summary, "f.fits");
    CHECK(record["metrics"]["weight_bad_pixels"].get<double>() == 100.0);
    if (use_rms) CHECK(record["metrics"]["weight_scale"].get<double>() == 1.0);
    CHECK(record["nsources"].get<int64_t>() == 1);  // the 5x5 block only
  }
}

TEST_CASE("input.weight is checked when the pipeline is loaded and refused for in-memory images", "[weight][config]") {
  const std::string mesh = "steps: [{background: {method: mesh}}, {segment: {relative_to: rms_map}}, label, measure]\n";
  CHECK_THROWS_WITH(test::pipeline_from("input: {weight: {image: WHT}}\n" + mesh), Catch::Contains("a weight map needs type:"));
  CHECK_THROWS_WITH(test::pipeline_from("input: {weight: {image: ERR, type: map_rms, rescale: true}}\n" + mesh),
                    Catch::Contains("an RMS map is used as it is"));
  CHECK_THROWS_WITH(test::pipeline_from("input: {weight: {image: WHT, type: map_weight}}\nsteps: [background, segment, label]\n"),
                    Catch::Contains("it needs the background step with method: mesh"));
  CHECK_THROWS_WITH(test::pipeline_from("input: {weight: {image: WHT, type: map_weight}}\n"
                                        "steps: [{background: {method: mesh}}, segment, label]\n"),
                    Catch::Contains("it needs the segment step with relative_to: rms_map"));
  CHECK_THROWS_WITH(test::pipeline_from("input: {weight: {image: WHT, type: map_weight}}\ntiling: {size: 64}\n" + mesh),
                    Catch::Contains("cannot run on tiles"));
  const Pipeline pipeline = test::pipeline_from("input: {weight: {image: WHT, type: map_var, thresh: 1e6}}\n" + mesh);
  WorkItem in_memory;  // no file, so no companion beside it
  in_memory.pixels.resize(8, 8);
  CHECK_THROWS_WITH(process_in_memory(pipeline, in_memory), Catch::Contains("an in-memory image has none"));
  const YAML::Node resolved = pipeline.resolved()["input"]["weight"];
  CHECK(resolved["type"].as<std::string>() == "map_var");
  CHECK(resolved["rescale"].as<bool>());
  CHECK(resolved["thresh"].as<double>() == 1e6);
}

TEST_CASE("a mask leaves its pixels out of detection, with any background; its files are not images", "[weight]") {
  test::TempDir dir("mask");
  const auto in = dir / "in";
  std::filesystem::create_directories(in);
  const std::vector<double> field = two_blocks();
  std::vector<double> mask(96 * 96, 0.0);
  for (int y = 18; y < 28; ++y) {
    for (int x = 18; x < 28; ++x) mask[y * 96 + x] = 4.0;  // over the first block
    for (int x = 58; x < 68; ++x) mask[y * 96 + x] = 0.5;  // below thresh 1: the second block stays
  }
  test::write_fits(in / "m.fits", -32, {96, 96}, field);
  test::write_fits(in / "m.mask.fits", -32, {96, 96}, mask);
  const Pipeline pipeline = global_pipeline(in, dir / "out", "{mask: {image: '{stem}.mask.fits', thresh: 1}}", "[csv]");
  const RunSummary summary = run_pipeline(pipeline, {});
  REQUIRE(summary.items() == 1);
  const nlohmann::json record = record_of(summary, "m.fits");
  CHECK(record["status"] == "ok");
  CHECK(record["metrics"]["masked_pixels"].get<double>() == 100.0);
  CHECK(record["nsources"].get<int64_t>() == 1);
  CHECK(pipeline.resolved()["input"]["mask"]["thresh"].as<double>() == 1.0);
}

TEST_CASE("a flag map gives every source the OR of its pixels' flags and their count (IMAFLAGS_ISO)", "[weight]") {
  test::TempDir dir("flag_map");
  const auto in = dir / "in";
  std::filesystem::create_directories(in);
  const std::vector<double> field = two_blocks();  // source 1: flags 1 and 4 on three pixels; source 2: none
  std::vector<double> flags(96 * 96, 0.0);
  flags[20 * 96 + 20] = 1.0;
  flags[21 * 96 + 22] = 4.0;
  flags[25 * 96 + 25] = 4.0;
  flags[50 * 96 + 50] = 8.0;  // on no source
  test::write_fits(in / "f.fits", -32, {96, 96}, field);
  test::write_fits(in / "f.flag.fits", 16, {96, 96}, flags);
  const Pipeline pipeline = global_pipeline(in, dir / "out", "{flags: {image: '{stem}.flag.fits'}}", "[csv, ldac]");
  const RunSummary summary = run_pipeline(pipeline, {});
  REQUIRE(summary.items() == 1);
  REQUIRE(summary.failed() == 0);
  const auto rows = test::csv_rows(dir / "out" / "f.cat.csv");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].at("imaflags_iso") == "5");
  CHECK(rows[0].at("nimaflags_iso") == "3");
  CHECK(rows[1].at("imaflags_iso") == "0");
  CHECK(rows[1].at("nimaflags_iso") == "0");
  fitsfile* file = nullptr;
  int status = 0, column = 0;
  fits_open_file(&file, (dir / "out" / "f.ldac").c_str(), READONLY, &status);
  fits_movnam_hdu(file, BINARY_TBL, const_cast<char*>("LDAC_OBJECTS"), 0, &status);
  fits_get_colnum(file, CASEINSEN, const_cast<char*>("IMAFLAGS_ISO"), &column, &status);
  int value = -1;
  fits_read_col(file, TINT, column, 1, 1, 1, nullptr, &value, nullptr, &status);
  fits_close_file(file, &status);
  CHECK(status == 0);
  CHECK(value == 5);
  CHECK_THROWS_WITH(test::pipeline_from("input: {flags: {image: DQ}}\nsteps: [background, segment, label]\n"),
                    Catch::Contains("it needs the measure step"));
}

TEST_CASE("flag maps keep all 32 bits, unsigned as SExtractor's; a float flag map is refused", "[weight]") {
  test::TempDir dir("flag_bits");
  const auto in = dir / "in";
  std::filesystem::create_directories(in);
  const std::vector<double> field = two_blocks();
  std::vector<double> flags(96 * 96, 0.0);
  flags[20 * 96 + 20] = (1 << 25) | 1;  // float32 would round it to 1 << 25
  flags[21 * 96 + 22] = 4.0;
  flags[20 * 96 + 60] = 1.0;
  flags[21 * 96 + 61] = -2147483648.0;  // bit 31 alone: the largest flag
  test::write_fits(in / "f.fits", -32, {96, 96}, field);
  test::write_fits(in / "f.flag.fits", 32, {96, 96}, flags);
  test::write_fits(in / "g.fits", -32, {96, 96}, field);
  test::write_fits(in / "g.flag.fits", -32, {96, 96}, flags);
  const auto rows_of = [&](const std::string& type) {
    const Pipeline pipeline = global_pipeline(in, dir / type, "{patterns: ['?.fits'], flags: {image: '{stem}.flag.fits', type: " + type + "}}", "[csv]");
    const RunSummary summary = run_pipeline(pipeline, {});
    REQUIRE(summary.items() == 2);
    CHECK(summary.failed() == 1);
    CHECK_THAT(record_of(summary, "in/g.fits")["error"].get<std::string>(),
               Catch::Contains("g.flag.fits") && Catch::Contains("floating-point pixels"));
    return test::csv_rows(dir / type / "f.cat.csv");
  };
  const auto bits = rows_of("or");
  REQUIRE(bits.size() == 2);
  CHECK(bits[0].at("imaflags_iso") == std::to_string((1 << 25) | 5));
  CHECK(bits[1].at("imaflags_iso") == "-2147483647");  // bits 31 and 0 in a signed 32-bit column
  const auto largest = rows_of("max");
  CHECK(largest[1].at("imaflags_iso") == "-2147483648");
  CHECK(largest[1].at("nimaflags_iso") == "1");
  CHECK(rows_of("min")[1].at("imaflags_iso") == "1");
}

TEST_CASE("dual-image mode detects on one image and measures on the other, each less its own background", "[weight][dual]") {
  test::TempDir dir("dual_image");
  const auto in = dir / "in", det = dir / "det";
  std::filesystem::create_directories(in);
  std::filesystem::create_directories(det);
  std::vector<double> detection = test::star_field(96, 96, 8, 0), measurement(detection.size());
  std::mt19937 rng(21);
  std::normal_distribution<double> noise(1000.0, 5.0);  // another band: another sky, other noise
  for (auto& v : measurement) v = noise(rng);
  add_block(detection, 20, 20, 500.0);  // in both: measured at the measurement image's 300
  add_block(measurement, 20, 20, 300.0);
  add_block(detection, 60, 60, 500.0);  // in the detection image only: measured there at ~0
  add_block(measurement, 60, 20, 500.0);  // in the measurement image only: not detected
  test::write_fits(in / "f.fits", -32, {96, 96}, measurement);
  test::write_fits(det / "f.fits", -32, {96, 96}, detection);
  test::write_fits(in / "f.det.fits", -32, {96, 96}, detection);
  const std::string steps = "steps: [{background: {method: mesh, size: 32}}, {segment: {nsigma: 5}}, {label: {connectivity: 8}}, measure]\n";
  for (const bool tree : {false, true}) {
    Pipeline pipeline = weight_pipeline(in, dir / (tree ? "out_tree" : "out_pattern"),
                                        "device: cpu\noutput: {formats: [csv]}\n" +
                                            std::string(tree ? "" : "input: {detect: {image: '{stem}.det.fits'}}\n") + steps);
    if (tree) {  // the detection images are in another tree: f.det.fits is an image of its own here
      pipeline.input.detect = {"detection image", "", det};
      pipeline.input.patterns = {"f.fits"};
    }
    const RunSummary summary = run_pipeline(pipeline, {});
    REQUIRE(summary.items() == 1);  // f.det.fits is the companion, not an image
    REQUIRE(summary.failed() == 0);
    const auto rows = test::csv_rows(dir / (tree ? "out_tree" : "out_pattern") / "f.cat.csv");
    REQUIRE(rows.size() == 2);
    CHECK(std::stod(rows[0].at("flux_iso")) == Approx(36 * 300.0).epsilon(0.05));  // the measurement image's flux
    CHECK(std::abs(std::stod(rows[1].at("flux_iso"))) < 36 * 300.0 * 0.05);        // nothing there in the measurement image
    CHECK(rows[1].at("ymin") == "60");                                              // the detection image's block
  }
  Pipeline bad = weight_pipeline(in, dir / "out_missing",
                                 "device: cpu\noutput: {formats: [csv]}\ninput: {detect: {image: '{stem}.r.fits'}}\n" + steps);
  const RunSummary failed = run_pipeline(bad, {});
  CHECK(failed.failed() == 2);  // f.fits and f.det.fits: neither has an f.r.fits / f.det.r.fits
  CHECK_THAT(record_of(failed, "in/f.fits")["error"].get<std::string>(), Catch::Contains("its detection image"));
}
