// measure's photometry on the GPU (cuda/photometry.hpp) against the CPU's (PhotometrySetting::measure)
// on the same catalog, label map, background and noise: the same rows and VIGNETs; and the engine's
// CPU and CUDA runs of a pipeline with photometry, GPU-resident images included.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <string>
#include <vector>

#include "gpu_test_helpers.hpp"
#include "imflow/engine.hpp"
#include "imflow/params.hpp"
#include "imflow/pipeline.hpp"
#include "src/steps/measure_photometry.hpp"
#include "cuda/background_mesh.hpp"
#include "cuda/photometry.hpp"
#include "tests/tiling_test_helpers.hpp"

using namespace gpu_test;
namespace fs = std::filesystem;

namespace {

constexpr double kTolerance = 1e-9;  // relative (with the same absolute margin); flags and VIGNETs exact
// The windowed block's position and the values measured there: winpos stops once a step is under
// kernels::kMinStep (1e-4 px), and the device's exp rounds differently from the host's, so the two
// can stop one step apart (3e-8 px, and FLUX_WIN 2.5e-8 relative apart, seen on 1 run in 40).
constexpr double kWindowedTolerance = 1e-6;

// Whether value k of a row is in the windowed block (compared within kWindowedTolerance).
bool windowed_column(const imflow::kernels::PhotometrySpec& spec, int k) {
  return spec.windowed && k >= spec.window_offset() && k < spec.window_offset() + imflow::kernels::kWindowValues;
}

// Whether value k of a row is a flag column (compared exactly).
bool flag_column(const imflow::kernels::PhotometrySpec& spec, int k) {
  if (k == spec.flags_offset()) return true;
  if (spec.auto_flux && k == spec.auto_offset() + 3) return true;
  return spec.windowed && k == spec.window_offset() + imflow::kernels::kWinFlags;
}

void check_tables(const imflow::PhotometryTable& gpu, const imflow::PhotometryTable& cpu, size_t sources) {
  REQUIRE(gpu.spec.stride() == cpu.spec.stride());
  REQUIRE(gpu.rows.size() == sources * static_cast<size_t>(cpu.spec.stride()));
  REQUIRE(gpu.rows.size() == cpu.rows.size());
  CHECK(gpu.zeropoint == cpu.zeropoint);
  size_t identical = 0;
  const int stride = cpu.spec.stride();
  for (size_t i = 0; i < cpu.rows.size(); ++i) {
    const double g = gpu.rows[i], c = cpu.rows[i];
    if (std::memcmp(&g, &c, sizeof g) == 0) {
      ++identical;
      continue;
    }
    const int k = static_cast<int>(i % static_cast<size_t>(stride));
    INFO("source " << i / stride + 1 << " value " << k << ": GPU " << std::setprecision(17) << g << " CPU " << c);
    if (flag_column(cpu.spec, k)) {
      CHECK(g == c);
    } else {
      const double tolerance = windowed_column(cpu.spec, k) ? kWindowedTolerance : kTolerance;
      CHECK(((std::isnan(g) && std::isnan(c)) ||
             std::abs(g - c) <= tolerance * std::max({std::abs(g), std::abs(c), 1.0})));
    }
  }
  std::printf("photometry: %zu of %zu values bit-identical\n", identical, cpu.rows.size());
  REQUIRE(gpu.vignets.size() == cpu.vignets.size());
  CHECK(std::memcmp(gpu.vignets.data(), cpu.vignets.data(), gpu.vignets.size() * sizeof(float)) == 0);
}

// `steps` (YAML, ending with the measure step whose parameters are `measure`) on the GPU; then the
// CPU's photometry of the GPU's catalog on the GPU's labels, background and noise, compared.
// Returns the GPU's catalog.
imflow::Catalog check_photometry(Slot& slot, const WorkItem& input, const std::string& steps, const std::string& measure) {
  const imflow::Pipeline pipeline =
      test::pipeline_from("device: cuda\nsteps: [" + steps + "{measure: " + measure + "}]\n");
  WorkItem gpu_item;
  make_pinned(gpu_item, input.pixels.width(), input.pixels.height());
  std::copy(input.pixels.begin(), input.pixels.end(), gpu_item.pixels.begin());
  run_item(slot, gpu_item, [&](GpuContext& gpu) {
    for (const auto& step : pipeline.steps) step->run_cuda(gpu_item, gpu);
  });
  REQUIRE(gpu_item.catalog.has_value());
  REQUIRE(gpu_item.photometry.has_value());
  const size_t n = static_cast<size_t>(input.pixels.size());

  WorkItem cpu_item;
  cpu_item.pixels.resize(input.pixels.width(), input.pixels.height());
  std::copy(input.pixels.begin(), input.pixels.end(), cpu_item.pixels.begin());
  cpu_item.catalog = gpu_item.catalog;
  cpu_item.labels = gpu_item.labels;
  cpu_item.mask.resize(n);  // the detected pixels, less what CLEAN removed: the neighbours' blanks
  REQUIRE(cudaMemcpy(cpu_item.mask.data(), slot.gpu.mask.data(), n, cudaMemcpyDeviceToHost) == cudaSuccess);
  imflow::kernels::MeasureBackground background;  // what measure_step.cpp's background_of gives the CPU
  background.gain = gpu_item.gain.value_or(0.0);
  const bool global_noise = measure.find("noise: global") != std::string::npos;
  std::vector<float> map, rms;
  if (slot.gpu.has_background_maps) {
    map = from_device(slot.gpu.mesh_background->back_map.data(), n);
    rms = from_device(slot.gpu.mesh_background->rms_map.data(), n);
    background.map = map.data();
    background.rms_map = global_noise ? nullptr : rms.data();
    background.rms = gpu_item.background->std;
  } else if (gpu_item.background) {
    background.level = gpu_item.background->median;
    background.rms = gpu_item.background->std;
  }
  imflow::ParamReader reader(YAML::Load(measure), "measure", "test.yaml");
  const imflow::PhotometrySetting setting = imflow::PhotometrySetting::from_params(reader);
  setting.measure(cpu_item, background, background);
  REQUIRE(cpu_item.photometry.has_value());
  std::printf("photometry: %zu sources, %s\n", gpu_item.catalog->size(), measure.c_str());
  check_tables(*gpu_item.photometry, *cpu_item.photometry, gpu_item.catalog->size());
  if (global_noise && background.gain == 0.0) {  // the catalog's isophotal errors from the global RMS too
    for (const imflow::Source& s : *gpu_item.catalog) {
      CHECK(s.flux_iso_err == Approx(std::sqrt(static_cast<double>(s.npix)) * gpu_item.background->std).epsilon(1e-12));
    }
  }
  return *gpu_item.catalog;
}

const std::string kEverything =
    "{gain: 2, auto: true, apertures: [3, 6, 12], aperture_bkgann: [8, 14], flux_radius: [0.25, 0.5, 0.9], "
    "windowed: true, vignet: [15, 11], zeropoint: 25}";

}  // namespace

TEST_CASE("GPU photometry equals the CPU's: global background, NaN pixels", "[gpu][photometry]") {
  Slot slot;
  WorkItem item;
  fill_sky(item, 300, 220, fresh_seed("photometry global"), 40, 0.002);
  check_photometry(slot, item, "background, segment, label, ", kEverything);
  check_photometry(slot, item, "background, segment, label, ",
                   "{auto: {kron_fact: 2.5, min_radius: 0, min_kron_radius: 3.5}, apertures: [5, 9], "
                   "aperture_subpix: 5, mask_neighbours: false}");
  check_photometry(slot, item, "background, segment, label, ", "{flux_radius: [0.5], windowed: true, gain: 0.5}");
}

TEST_CASE("GPU photometry equals the CPU's: mesh background and RMS map, deblended blends", "[gpu][photometry]") {
  Slot slot;
  WorkItem item;
  fill_sky(item, 256, 192, fresh_seed("photometry mesh"), 60, 0.001);
  const std::string mesh = "{background: {method: mesh, size: 32}}, {segment: {relative_to: rms_map, nsigma: 3}}, ";
  check_photometry(slot, item, mesh + "label, ", kEverything);
  check_photometry(slot, item,
                   "{background: {method: mesh, size: 32}}, {segment: {nsigma: 1.5, compare: float32}}, "
                   "{label: {connectivity: 8}}, deblend, ",
                   kEverything);
  check_photometry(slot, item, mesh + "label, ", "{apertures: [4], aperture_subpix: 11, mask_neighbours: false}");
  // noise: global (SExtractor's WEIGHT_TYPE NONE): the map subtracted, the errors from the global RMS.
  check_photometry(slot, item, mesh + "label, ", "{noise: global, auto: true, apertures: [3, 6], windowed: true}");
}

TEST_CASE("GPU photometry with noise: global when the catalog overflows the device capacity", "[gpu][photometry]") {
  Slot slot;
  imflow::cuda::set_catalog_capacity(slot.gpu, 4);  // collect_results measures the catalog on the host
  WorkItem item;
  fill_sky(item, 256, 192, fresh_seed("photometry global noise overflow"), 60, 0.001);
  check_photometry(slot, item, "{background: {method: mesh, size: 32}}, segment, label, ",
                   "{noise: global, apertures: [6], windowed: true}");
}

// A bright extended source (a ~ 19 px) among small ones: its row is measured by a cluster of
// blocks (kBlockRowMinA; a single block where the device has no clusters, forced here too), in
// the stream and, with VIGNETs, after it; the rows still equal the CPU's.
TEST_CASE("GPU photometry of a large source, measured by a block", "[gpu][photometry][sanitize]") {
  Slot slot;
  WorkItem item;
  fill_sky(item, 320, 288, fresh_seed("photometry large source"), 30, 0.0005);
  float* pixels = item.pixels.data();
  for (int64_t y = 0; y < 288; ++y)
    for (int64_t x = 0; x < 320; ++x) {
      const double r2 = (x - 171.3) * (x - 171.3) + (y - 139.6) * (y - 139.6);
      pixels[y * 320 + x] += static_cast<float>(3000.0 * std::exp(-r2 / (2 * 20.0 * 20.0)));
    }
  auto largest = [](const imflow::Catalog& catalog) {
    double a = 0.0;
    for (const auto& source : catalog) a = std::max(a, source.a);
    return a;
  };
  const std::string in_stream = "{gain: 2, auto: true, apertures: [3, 12], flux_radius: [0.5], windowed: true}";
  const imflow::Catalog catalog = check_photometry(slot, item, "background, segment, label, ", in_stream);
  INFO("largest a " << largest(catalog));
  CHECK(largest(catalog) >= imflow::cuda::kBlockRowMinA);
  CHECK(largest(check_photometry(slot, item, "background, segment, label, ", kEverything)) >= imflow::cuda::kBlockRowMinA);
  slot.gpu.photometry->row_clusters = 0;  // as on a device without cluster launches: one block per row
  check_photometry(slot, item, "background, segment, label, ", in_stream);
  check_photometry(slot, item, "background, segment, label, ", kEverything);
}

TEST_CASE("GPU photometry on an empty field", "[gpu][photometry]") {
  Slot slot;
  WorkItem flat;
  make_pinned(flat, 64, 48);
  std::fill(flat.pixels.begin(), flat.pixels.end(), 7.0f);
  check_photometry(slot, flat, "background, segment, label, ", kEverything);  // no source: no rows
}

TEST_CASE("GPU photometry when the catalog overflows the device capacity", "[gpu][photometry]") {
  Slot slot;
  imflow::cuda::set_catalog_capacity(slot.gpu, 4);  // collect_results measures the catalog on the host
  WorkItem item;
  fill_sky(item, 300, 220, fresh_seed("photometry overflow"), 40, 0.002);
  check_photometry(slot, item, "background, segment, label, ", kEverything);
  CHECK(slot.gpu.catalog_capacity > 4);  // grown for the next item
  check_photometry(slot, item, "{background: {method: mesh, size: 32}}, segment, label, ", kEverything);
}

// The engine: device cuda runs a pipeline with photometry on the GPU (it refused it before), the
// same catalogs as device cpu (the GPU's float64 atomics move x, y in the last digits), and a
// GPU-resident image gives the whole image's. Then SExtractor's detection at 1.5 sigma, whose
// detections under minarea and cleaned objects decide the neighbours' blanks on both devices.
TEST_CASE("The engine measures photometry on the GPU, GPU-resident images too", "[gpu][photometry][pipeline]") {
  test::TempDir dir("gpu_photometry_engine");
  fs::create_directories(dir / "in");
  fs::copy(fs::path(IMFLOW_SOURCE_DIR) / "datasets/samples/isaac_crop.fits", dir / "in" / "isaac_crop.fits");
  std::string yaml =
      "output: {formats: [csv]}\nsteps: [{background: {method: mesh, size: 32}}, {segment: {nsigma: 3}}, "
      "{label: {connectivity: 8}}, {measure: " + kEverything + "}]\n";
  auto run = [&](const std::string& device, const std::string& out, int64_t whole_above) {
    imflow::Pipeline pipeline = test::pipeline_from(yaml);
    pipeline.input.dir = dir / "in";
    pipeline.output.dir = dir / out;
    pipeline.engine.device = device;
    if (whole_above > 0) pipeline.tiling.size = whole_above;  // not explicit: photometry runs whole
    auto summary = imflow::run_pipeline(pipeline, {});
    REQUIRE(summary.failed() == 0);
    const auto json = nlohmann::json::parse(std::ifstream(dir / out / "summary.json"));
    CHECK(json["device"] == device);
    return summary;
  };
  run("cpu", "cpu", 0);
  run("cuda", "cuda", 0);
  const auto resident = run("cuda", "resident", 64);
  bool any_resident = false;
  for (const auto* record : resident.ordered_records())
    any_resident = any_resident || record->json.contains("gpu_resident");
  CHECK(any_resident);
  for (const auto& entry : fs::directory_iterator(dir / "cpu")) {
    const std::string file = entry.path().filename().string();
    if (!file.ends_with(".cat.csv")) continue;
    INFO(file);
    tiling_test::check_same_catalog(entry.path(), dir / "cuda" / file, 1e-6);
    tiling_test::check_same_catalog(dir / "cuda" / file, dir / "resident" / file, 1e-9);
  }
  for (const std::string style : {"sep", "sextractor"}) {
    yaml = "output: {formats: [csv]}\nsteps: [{background: {method: mesh, size: 32}}, {segment: {nsigma: 1.5, "
           "compare: float32}}, {label: {connectivity: 8}}, {deblend: {minarea: 5, clean_style: " + style + "}}, "
           "{measure: {auto: {kron_fact: 2.5, min_kron_radius: 3.5}, apertures: [6], vignet: [9, 9]}}]\n";
    run("cpu", "cpu-" + style, 0);
    run("cuda", "cuda-" + style, 0);
    INFO(style);
    tiling_test::check_same_catalog(dir / ("cpu-" + style) / "isaac_crop.cat.csv",
                                    dir / ("cuda-" + style) / "isaac_crop.cat.csv", 1e-6);
  }
}
