// GPU `map` against the CPU kernel: every operation and operand form on random skies with NaN and
// Inf, odd sizes (the float4 tail), an unaligned start, random bit patterns, the real sample
// images, the step's per-item and batched paths, map before the GPU detection steps, and engine
// runs (per item and batched) against the CPU engine.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/gpu_batch.hpp"
#include "cuda/map.hpp"
#include "gpu_test_helpers.hpp"
#include "imflow/engine.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/io/png.hpp"
#include "imflow/kernels/map.hpp"
#include "imflow/kernels/map_expression.hpp"
#include "test_helpers.hpp"

using namespace gpu_test;
namespace icuda = imflow::cuda;
namespace kernels = imflow::kernels;
namespace fs = std::filesystem;

namespace {

struct Expression {
  const char* text;
  // Only correctly rounded (+ - * / sqrt, x^2) and exact operations: the GPU equals the CPU bit
  // for bit. Otherwise within max_ulps units in the last place of max(|cpu|, scale) (scale: the
  // size of terms that cancel).
  bool exact;
  float scale = 0.0f;
  int max_ulps = 8;
};

const Expression kExpressions[] = {
    {"x", true}, {"-x", true}, {"x * 2.5 + 1", true}, {"(x - 365) / 37", true}, {"1 - x", true}, {"2 / x", true},
    {"x ^ 2", true}, {"sqrt(abs(x))", true}, {"min(x, 400)", true}, {"max(400, x)", true},
    {"clip(x, 300, 500)", true}, {"floor(x / 16) * 16", true}, {"ceil(x) - trunc(x)", true}, {"sign(x - 365)", true},
    {"x / (x + 1)", true}, {"x * x - x", true}, {"2 * pi * x", true}, {"x + nan", true}, {"-x^2 + 3 * x - 1", true},
    {"min(x, sqrt(x))", true}, {"max(x - 365, -(x - 365))", true}, {"abs(x - 365) / sqrt(x)", true},
    {"x + (x + (x + (x + (x + (x + (x + (x + (x + (x + (x + (x + (x + (x + (x + x))))))))))))))", true},
    {"asinh(x / 10) * 2.5 + 1", false, 20.0f}, {"asinh((x - 365) / 37)", false}, {"log(x)", false},
    {"log10(abs(x) + 1)", false}, {"log2(x)", false}, {"log1p(abs(x))", false}, {"exp(x / 100)", false},
    {"exp2(-abs(x) / 50)", false}, {"expm1(x / 1000)", false}, {"sin(x)", false}, {"cos(x / 7)", false},
    {"tan(x / 1000)", false}, {"asin(clip(x / 4000, -1, 1))", false}, {"acos(clip((x - 365) / 100, -1, 1))", false},
    {"atan(x)", false}, {"atan2(x, 365)", false}, {"atan2(365, x)", false},
    {"atan2(x - 365, sqrt(abs(x)))", false}, {"sinh(x / 100)", false}, {"cosh(x / 100)", false},
    {"tanh((x - 365) / 37)", false}, {"acosh(abs(x) + 1)", false}, {"atanh(clip((x - 365) / 400, -0.99, 0.99))", false},
    {"cbrt(x - 365)", false}, {"x ^ 1.5", false}, {"pow(2, x / 100)", false}, {"pow(abs(x), 0.3) * sign(x)", false},
    {"x ^ 0", false}, {"exp(-((x - 365) / 37)^2 / 2)", false},
    {"sqrt(abs(x)) + log1p(abs(x)) * 0.5 - tanh(x / 100) + atan(x) / pi + cbrt(x) - exp2(-abs(x) / 100) + "
     "sin(x / 50) * cos(x / 70) + asinh(x) + max(x, 0) ^ 0.25 - min(x, 1000) / 1000",
     false, 100.0f, 16},
};

kernels::MapProgram compile(const char* text) { return kernels::compile_map_expression(text); }

int64_t ulps(float a, float b) {
  auto ordered = [](float v) {
    const auto bits = static_cast<int64_t>(std::bit_cast<int32_t>(v));
    return bits < 0 ? std::numeric_limits<int32_t>::min() - bits : bits;
  };
  return std::abs(ordered(a) - ordered(b));
}

// Whether the GPU's value agrees with the CPU's (NaN with NaN, Inf with the same Inf).
bool agrees(float gpu, float cpu, const Expression& e) {
  if (std::isnan(cpu) || std::isnan(gpu)) return std::isnan(cpu) && std::isnan(gpu);
  if (e.exact) return std::bit_cast<uint32_t>(gpu) == std::bit_cast<uint32_t>(cpu);
  if (std::isinf(cpu) || std::isinf(gpu)) return gpu == cpu;
  const float size = std::max(std::abs(cpu), e.scale);
  const float ulp = std::nextafter(size, std::numeric_limits<float>::infinity()) - size;
  return std::abs(gpu - cpu) <= static_cast<float>(e.max_ulps) * ulp || ulps(gpu, cpu) <= e.max_ulps;
}

std::vector<float> on_cpu(const kernels::MapProgram& program, std::vector<float> pixels) {
  kernels::apply_map(program, {pixels.data(), static_cast<int64_t>(pixels.size()), 1});
  return pixels;
}

// Upload, map, download, collect: one item through a slot as the engine runs it.
std::vector<float> on_gpu(Slot& slot, const kernels::MapProgram& program, const std::vector<float>& pixels,
                          int64_t width, int64_t height) {
  WorkItem item;
  make_pinned(item, width, height);
  std::copy(pixels.begin(), pixels.end(), item.pixels.data());
  icuda::DownloadWants wants;
  wants.pixels = true;
  run_item(slot, item, [&](GpuContext& gpu) { icuda::map(gpu, program); }, wants);
  CHECK(slot.gpu.image_modified);
  return {item.pixels.begin(), item.pixels.end()};
}

// Every expression on one image: GPU against CPU, the first disagreement and the worst ulps shown.
void check_all(Slot& slot, const std::vector<float>& pixels, int64_t width, int64_t height, const char* what,
               bool exact_only = false) {
  for (const Expression& e : kExpressions) {
    if (exact_only && !e.exact) continue;
    INFO(what << " " << width << "x" << height << ": " << e.text);
    const kernels::MapProgram program = compile(e.text);
    const std::vector<float> cpu = on_cpu(program, pixels);
    const std::vector<float> gpu = on_gpu(slot, program, pixels, width, height);
    REQUIRE(gpu.size() == cpu.size());
    size_t bad = 0, first = 0;
    int64_t worst = 0;
    for (size_t i = 0; i < cpu.size(); ++i) {
      if (!agrees(gpu[i], cpu[i], e) && bad++ == 0) first = i;
      if (std::isfinite(cpu[i]) && std::isfinite(gpu[i])) worst = std::max(worst, ulps(gpu[i], cpu[i]));
    }
    if (!e.exact && width * height > 1000) std::printf("map %-10s %-40.40s worst %lld ulps\n", what, e.text, static_cast<long long>(worst));
    INFO("first at " << first << ": x " << pixels[first] << " gpu " << gpu[first] << " cpu " << cpu[first]);
    CHECK(bad == 0);
  }
}

std::vector<float> sky(int64_t width, int64_t height, uint32_t seed) {
  WorkItem item;
  fill_sky(item, width, height, seed, static_cast<int>(1 + width * height / 2000), 0.01);  // 1% NaN, some Inf
  return {item.pixels.begin(), item.pixels.end()};
}

}  // namespace

TEST_CASE("GPU map equals the CPU on random skies with NaN and Inf, odd sizes included", "[gpu][map]") {
  Slot slot;
  uint32_t seed = fresh_seed("GPU map on random skies");
  const int64_t sizes[][2] = {{256, 256}, {217, 181}, {1, 1}, {3, 1}, {5, 3}, {1001, 7}};
  for (const auto& s : sizes) check_all(slot, sky(s[0], s[1], seed++), s[0], s[1], "sky");
}

TEST_CASE("GPU map on random bit patterns and special values", "[gpu][map]") {
  Slot slot;
  std::mt19937 rng(fresh_seed("GPU map on random bits"));
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 1e-20f, -1e20f, 8388608.5f,
                               std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                               std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
                               -std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  while (values.size() < 65536 + 3) values.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  check_all(slot, values, static_cast<int64_t>(values.size()), 1, "bits", true);
  for (const char* text : {"sqrt(x)", "cbrt(x)", "atan(x)", "tanh(x)", "sin(x)", "log(x)", "asinh(x)", "sign(x)"}) {
    INFO(text);
    const Expression e{text, false};
    const std::vector<float> cpu = on_cpu(compile(text), values);
    const std::vector<float> gpu = on_gpu(slot, compile(text), values, static_cast<int64_t>(values.size()), 1);
    size_t bad = 0;
    for (size_t i = 0; i < cpu.size(); ++i) bad += agrees(gpu[i], cpu[i], e) ? 0 : 1;
    CHECK(bad == 0);
  }
}

TEST_CASE("GPU map from an unaligned start (no float4 loads) equals the CPU", "[gpu][map]") {
  Slot slot;
  const std::vector<float> pixels = sky(97, 31, 11);
  const kernels::MapProgram program = compile("asinh((x - 365) / 37) * 2 + sqrt(abs(x))");
  WorkItem item;
  make_pinned(item, 97, 31);
  std::copy(pixels.begin(), pixels.end(), item.pixels.data());
  icuda::DownloadWants wants;
  wants.pixels = true;
  run_item(slot, item, [&](GpuContext& gpu) {
    icuda::map_values(gpu.image.data() + 1, gpu.size() - 1, program, gpu.stream);
    gpu.image_modified = true;
  }, wants);
  std::vector<float> cpu(pixels.begin() + 1, pixels.end());
  cpu = on_cpu(program, cpu);
  CHECK(std::bit_cast<uint32_t>(item.pixels.data()[0]) == std::bit_cast<uint32_t>(pixels[0]));
  const Expression e{"", false, 10.0f};
  size_t bad = 0;
  for (size_t i = 0; i < cpu.size(); ++i) bad += agrees(item.pixels.data()[i + 1], cpu[i], e) ? 0 : 1;
  CHECK(bad == 0);
}

TEST_CASE("GPU map on the real sample images", "[gpu][map][real]") {
  Slot slot;
  const fs::path samples = fs::path(IMFLOW_SOURCE_DIR) / "datasets/samples";
  int images = 0;
  for (const char* name : {"isaac_crop.fits", "dss_crop.fits"}) {
    if (!fs::exists(samples / name)) continue;
    imflow::ImageBuffer image;
    imflow::read_fits_plane(samples / name, 0, 0, image);
    check_all(slot, {image.begin(), image.end()}, image.width(), image.height(), name);
    ++images;
  }
  for (const auto& entry : fs::directory_iterator(samples / "mri")) {
    if (entry.path().extension() != ".png") continue;
    imflow::ImageBuffer image;
    imflow::read_png(entry.path(), image);
    check_all(slot, {image.begin(), image.end()}, image.width(), image.height(), "mri png");
    ++images;
  }
  if (images == 0) WARN("skipped: no sample images under " << samples);
}

TEST_CASE("the map step's CUDA paths, per item and batched, equal its CPU path", "[gpu][map][batched]") {
  Slot slot;
  for (const Expression& e : {Expression{"(x - 365) / 37 * 10 + 2 ^ 3", true}, Expression{"asinh(x / 10) * 2.5 + 1", false, 20.0f}}) {
    const auto pipeline = test::pipeline_from(std::string("steps: [{map: {expression: '") + e.text + "'}}]");
    const imflow::Step& step = *pipeline.steps[0];
    REQUIRE(step.has_cuda());
    REQUIRE(step.has_cuda_batch());
    for (const auto& shape : {std::pair<int64_t, int64_t>{7, 5}, std::pair<int64_t, int64_t>{181, 217}}) {
      const auto [w, h] = shape;
      INFO(e.text << " " << w << "x" << h);
      std::vector<WorkItem> items(3);
      std::vector<WorkItem*> pointers;
      std::vector<std::vector<float>> expected;
      for (size_t b = 0; b < items.size(); ++b) {
        const std::vector<float> pixels = sky(w, h, 100 + static_cast<uint32_t>(b));
        make_pinned(items[b], w, h);
        std::copy(pixels.begin(), pixels.end(), items[b].pixels.data());
        pointers.push_back(&items[b]);
        WorkItem cpu;
        cpu.pixels.resize(w, h);
        std::copy(pixels.begin(), pixels.end(), cpu.pixels.data());
        step.run_cpu(cpu);
        expected.emplace_back(cpu.pixels.begin(), cpu.pixels.end());
      }
      WorkItem single;  // the per-item path on the first image
      make_pinned(single, w, h);
      std::copy(items[0].pixels.begin(), items[0].pixels.end(), single.pixels.data());
      icuda::DownloadWants wants;
      wants.pixels = true;
      run_item(slot, single, [&](GpuContext& gpu) { step.run_cuda(single, gpu); }, wants);

      imflow::GpuBatch batch(0, slot.stream.get());
      icuda::enqueue_batch_upload(batch, pointers.data(), 3);
      step.run_cuda_batch(pointers.data(), 3, batch);
      CHECK(batch.image_modified);
      icuda::enqueue_batch_download(batch, pointers.data(), 3);
      slot.stream.synchronize();
      size_t bad = 0;
      for (size_t b = 0; b < items.size(); ++b) {
        for (int64_t i = 0; i < w * h; ++i) bad += agrees(items[b].pixels.data()[i], expected[b][i], e) ? 0 : 1;
      }
      for (int64_t i = 0; i < w * h; ++i) bad += agrees(single.pixels.data()[i], expected[0][i], e) ? 0 : 1;
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("GPU map before the GPU detection steps gives the CPU's mask, labels and catalog", "[gpu][map][pipeline]") {
  Slot slot;
  WorkItem item;
  fill_sky(item, 400, 300, fresh_seed("GPU map then detection"), 60);
  const std::vector<float> original(item.pixels.begin(), item.pixels.end());
  const kernels::MapProgram program = compile("(x - 300) * 1.5 + sqrt(abs(x))");  // exact: the same pixels
  icuda::DownloadWants wants{true, true, true, true, false};
  run_item(slot, item, [&](GpuContext& gpu) {
    icuda::map(gpu, program);
    icuda::background(gpu, 3.0, 100);
    icuda::segment(gpu, 5.0, false);
    icuda::label(gpu, 8);
    icuda::measure(gpu);
  }, wants);
  std::vector<float> mapped = on_cpu(program, original);
  REQUIRE(item.pixels.size() == static_cast<int64_t>(mapped.size()));
  CHECK(std::equal(mapped.begin(), mapped.end(), item.pixels.begin(),
                   [](float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b)); }));
  const imflow::ConstImageView view{mapped.data(), 400, 300};
  REQUIRE(item.threshold.has_value());
  const CpuResult cpu = cpu_pipeline(view, view, 3.0, 100, *item.threshold, 8);
  check_background(*item.background, cpu.background);
  CHECK(item.mask == cpu.mask);
  CHECK(item.labels == cpu.labels);
  REQUIRE(item.catalog.has_value());
  CHECK(cpu.nlabels > 0);
  check_catalog(*item.catalog, cpu.catalog);
}

TEST_CASE("engine runs with map on the GPU, per item and batched, equal the CPU engine", "[gpu][map][pipeline][batched]") {
  test::TempDir dir("gpu_map_engine");
  const fs::path samples = fs::path(IMFLOW_SOURCE_DIR) / "datasets/samples";
  fs::create_directories(dir / "mri");
  fs::create_directories(dir / "astro");
  for (const auto& e : fs::directory_iterator(samples / "mri")) fs::copy(e.path(), dir / "mri" / e.path().filename());
  for (const char* name : {"isaac_crop.fits", "dss_crop.fits"}) fs::copy(samples / name, dir / "astro" / name);
  auto run = [&](const std::string& input, const std::string& output, const std::string& device, int batch,
                 const std::string& formats, const std::string& steps) {
    auto pipeline = test::pipeline_from("device: " + device + "\nbatch: " + std::to_string(batch) +
                                        "\noutput: {formats: [" + formats + "]}\nsteps: " + steps + "\n");
    pipeline.input.dir = dir / input;
    pipeline.output.dir = dir / output;
    const auto summary = imflow::run_pipeline(pipeline, {});
    CHECK(summary.failed() == 0);
    CHECK(summary.succeeded() > 0);
    return summary.succeeded();
  };
  // MRI: map + normalize is batchable (every step has run_cuda_batch).
  const std::string mri_steps = "[{map: {expression: 'sqrt(x) * 16 + log1p(x)'}}, normalize]";
  const auto items = run("mri", "cpu", "cpu", 1, "fits_image", mri_steps);
  run("mri", "gpu1", "cuda", 1, "fits_image", mri_steps);
  run("mri", "gpu64", "cuda", 64, "fits_image", mri_steps);
  int64_t compared = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "cpu")) {
    if (entry.path().string().find(".image.fits") == std::string::npos) continue;
    imflow::ImageBuffer cpu;
    imflow::read_fits_plane(entry.path(), 0, 0, cpu);
    for (const char* gpu_dir : {"gpu1", "gpu64"}) {
      INFO(gpu_dir << " " << entry.path().filename().string());
      imflow::ImageBuffer gpu;
      imflow::read_fits_plane(dir / gpu_dir / fs::relative(entry.path(), dir / "cpu"), 0, 0, gpu);
      REQUIRE(gpu.size() == cpu.size());
      size_t bad = 0;
      for (int64_t i = 0; i < cpu.size(); ++i) {
        const float a = gpu.data()[i], c = cpu.data()[i];
        if (std::isnan(c) ? !std::isnan(a) : !(std::abs(a - c) <= 1e-5f)) ++bad;  // normalized to [0, 1]
      }
      CHECK(bad == 0);
    }
    ++compared;
  }
  CHECK(compared == static_cast<int64_t>(items));
  // Astronomy: an exact map before detection: the same sources on both devices.
  const std::string astro_steps = "[{map: {expression: '(x - 100) * 2 + sqrt(abs(x))'}}, background, segment, label, measure]";
  run("astro", "astro_cpu", "cpu", 1, "csv", astro_steps);
  run("astro", "astro_gpu", "cuda", 64, "csv", astro_steps);
  auto summary_items = [&](const char* out) {
    std::map<std::string, std::pair<int, double>> found;
    std::ifstream stream(dir / out / "summary.json");
    const nlohmann::json summary = nlohmann::json::parse(stream);
    for (const auto& record : summary["items"]) {
      found[record["file"].get<std::string>()] = {record["nsources"].get<int>(), record["background"]["median"].get<double>()};
    }
    return found;
  };
  const auto cpu_items = summary_items("astro_cpu");
  CHECK(cpu_items.size() == 2);
  CHECK(summary_items("astro_gpu") == cpu_items);
}
