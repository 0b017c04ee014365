// The mesh background, segmentation against its maps and the new measurement columns on the GPU,
// against their CPU twins (kernels::mesh_background, threshold_mask_local, measure_sources).
#include <chrono>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "cuda/background_mesh.hpp"
#include "gpu_test_helpers.hpp"
#include "imflow/kernels/background_mesh.hpp"
#include "imflow/kernels/segment_map.hpp"

using namespace gpu_test;

namespace {

imflow::kernels::MeshParams mesh_params(int64_t size, int64_t filter) {
  imflow::kernels::MeshParams p;
  p.mesh_width = p.mesh_height = size;
  p.filter_width = p.filter_height = filter;
  return p;
}

std::vector<float> device_map(Slot& slot, const float* device, size_t n) {
  std::vector<float> out(n);
  IMFLOW_CUDA_CHECK(cudaMemcpy(out.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost));
  (void)slot;
  return out;
}

// Sky with a gradient and, optionally, a NaN block big enough to drop meshes.
void fill_gradient_sky(WorkItem& item, int64_t w, int64_t h, uint32_t seed, bool nan_block) {
  fill_sky(item, w, h, seed, 30, 0.001);
  float* p = item.pixels.data();
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) p[y * w + x] += static_cast<float>(0.05 * x - 0.03 * y);
  if (nan_block)
    for (int64_t y = h / 4; y < h / 2; ++y)
      for (int64_t x = w / 3; x < w / 3 + w / 4; ++x) p[y * w + x] = NAN;
}

// Maps within float rounding of the CPU's (the per-mesh sums are added in another order).
void check_maps(const std::vector<float>& gpu, const std::vector<float>& cpu, double rms) {
  REQUIRE(gpu.size() == cpu.size());
  double worst = 0.0;
  size_t identical = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    worst = std::max(worst, std::fabs(gpu[i] - cpu[i]) / std::max(std::fabs(static_cast<double>(cpu[i])), 1e-3 * rms));
    identical += gpu[i] == cpu[i];
  }
  std::printf("mesh map: max rel diff %.3g, identical %.4f\n", worst, static_cast<double>(identical) / cpu.size());
  CHECK(worst <= 1e-5);
}

void check_new_columns(const imflow::Catalog& gpu, const imflow::Catalog& cpu) {
  REQUIRE(gpu.size() == cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    INFO("source " << i + 1);
    const auto &g = gpu[i], &c = cpu[i];
    CHECK(g.flags == c.flags);
    CHECK(g.flux_iso == Approx(c.flux_iso).epsilon(1e-9).margin(1e-9));
    const std::pair<double, double> shapes[] = {{g.x2, c.x2}, {g.y2, c.y2}, {g.a, c.a}, {g.b, c.b}};
    for (const auto& [gv, cv] : shapes) {
      CHECK(std::isnan(gv) == std::isnan(cv));
      if (!std::isnan(cv)) CHECK(gv == Approx(cv).epsilon(1e-7));
    }
    if (!std::isnan(c.xy)) CHECK(g.xy == Approx(c.xy).epsilon(1e-7).margin(1e-9));
    // An orientation: theta and theta +- pi are the same ellipse (+-pi/2 when xy rounds to -0 or +0).
    if (!std::isnan(c.theta)) CHECK(std::fabs(std::remainder(g.theta - c.theta, M_PI)) < 1e-6);
  }
}

// GPU: mesh background, segment, label, measure; CPU: the same on the GPU's maps (so that a
// last-bit map difference cannot move a pixel across the threshold); maps checked separately.
void check_mesh_pipeline(Slot& slot, WorkItem& item, const imflow::kernels::MeshParams& params, double nsigma,
                         imflow::cuda::Threshold relative_to) {
  run_item(slot, item, [&](GpuContext& gpu) {
    imflow::cuda::background_mesh(gpu, params);
    imflow::cuda::segment(gpu, nsigma, relative_to);
    imflow::cuda::label(gpu, 8);
    imflow::cuda::measure(gpu, 2.0);
  });
  const auto view = item.pixels.view();
  const size_t n = static_cast<size_t>(view.size());
  std::vector<float> cpu_back, cpu_rms;
  const auto cpu_stats = imflow::kernels::mesh_background(view, params, cpu_back, cpu_rms);
  REQUIRE(item.background.has_value());
  CHECK(item.background->valid == cpu_stats.valid);
  CHECK(item.background->meshes == cpu_stats.meshes);
  CHECK(item.background->meshes_dropped == cpu_stats.meshes_dropped);
  CHECK(static_cast<float>(item.background->median) == Approx(cpu_stats.median).epsilon(1e-5));
  CHECK(static_cast<float>(item.background->std) == Approx(cpu_stats.std).epsilon(1e-5));
  const auto& state = *slot.gpu.mesh_background;
  const auto back = device_map(slot, state.back_map.data(), n);
  const auto rms = device_map(slot, state.rms_map.data(), n);
  check_maps(back, cpu_back, cpu_stats.std);
  check_maps(rms, cpu_rms, cpu_stats.std);

  std::vector<uint8_t> mask(n);
  const bool per_pixel = relative_to == imflow::cuda::Threshold::rms_map;
  imflow::kernels::threshold_mask_local(view, back.data(), per_pixel ? rms.data() : nullptr, nsigma,
                                        item.background->std, mask.data());
  CHECK(item.mask == mask);
  std::vector<int32_t> labels(n);
  const int32_t nlabels = imflow::kernels::label_components({mask.data(), view.width, view.height}, 8, labels.data());
  REQUIRE(item.nlabels.has_value());
  CHECK(*item.nlabels == nlabels);
  CHECK(item.labels == labels);
  imflow::kernels::MeasureBackground background;
  background.map = back.data();
  background.rms_map = rms.data();
  background.gain = 2.0;
  const auto cpu_catalog = imflow::kernels::measure_sources(view, labels.data(), nlabels, background);
  REQUIRE(item.catalog.has_value());
  check_catalog(*item.catalog, cpu_catalog);
  check_new_columns(*item.catalog, cpu_catalog);
}

}  // namespace

TEST_CASE("GPU mesh background, segment against the maps and measure equal the CPU's", "[gpu][mesh]") {
  Slot slot;
  const uint32_t seed = fresh_seed("gpu mesh");
  struct Case {
    int64_t w, h, size, filter;
    bool nan_block;
  };
  for (const Case c : {Case{1000, 700, 64, 3, false}, Case{517, 389, 64, 3, true}, Case{2048, 2048, 64, 3, false},
                       Case{333, 300, 32, 5, true}, Case{200, 40, 64, 3, false}, Case{50, 300, 64, 3, false},
                       Case{64, 64, 64, 1, false}}) {
    INFO(c.w << "x" << c.h << " mesh " << c.size << " filter " << c.filter);
    WorkItem item;
    fill_gradient_sky(item, c.w, c.h, seed + static_cast<uint32_t>(c.w), c.nan_block);
    check_mesh_pipeline(slot, item, mesh_params(c.size, c.filter), 1.5, imflow::cuda::Threshold::rms_map);
    check_mesh_pipeline(slot, item, mesh_params(c.size, c.filter), 3.0, imflow::cuda::Threshold::background);
  }
}

TEST_CASE("GPU measure: the new columns with the global background", "[gpu][mesh]") {
  Slot slot;
  WorkItem item;
  fill_sky(item, 777, 555, fresh_seed("gpu columns"), 40, 0.002);
  run_item(slot, item, [](GpuContext& gpu) {
    imflow::cuda::background(gpu, 3.0, 100);
    imflow::cuda::segment(gpu, 3.0, false);
    imflow::cuda::label(gpu, 4);
    imflow::cuda::measure(gpu, 0.5);
  });
  imflow::kernels::MeasureBackground background;
  background.level = item.background->median;
  background.rms = item.background->std;
  background.gain = 0.5;
  const auto cpu = imflow::kernels::measure_sources(item.pixels.view(), item.labels.data(), *item.nlabels, background);
  REQUIRE(item.catalog.has_value());
  REQUIRE(cpu.size() > 10);
  check_catalog(*item.catalog, cpu);
  check_new_columns(*item.catalog, cpu);
}

TEST_CASE("GPU measure overflow with the mesh background: the host fallback subtracts the map, errors from its RMS map and gain", "[gpu][mesh]") {
  Slot slot;
  WorkItem item;
  fill_gradient_sky(item, 600, 500, fresh_seed("gpu mesh overflow"), false);
  imflow::cuda::set_catalog_capacity(slot.gpu, 2);
  const auto params = mesh_params(64, 3);
  run_item(slot, item, [&](GpuContext& gpu) {
    imflow::cuda::background_mesh(gpu, params);
    imflow::cuda::segment(gpu, 1.5, imflow::cuda::Threshold::rms_map);
    imflow::cuda::label(gpu, 8);
    imflow::cuda::measure(gpu, 4.0);
  });
  REQUIRE(*item.nlabels > 2);
  const size_t n = static_cast<size_t>(item.pixels.size());
  const auto back = device_map(slot, slot.gpu.mesh_background->back_map.data(), n);
  const auto rms = device_map(slot, slot.gpu.mesh_background->rms_map.data(), n);
  imflow::kernels::MeasureBackground background;  // the fallback's map, RMS map and gain
  background.map = back.data();
  background.rms_map = rms.data();
  background.gain = 4.0;
  const auto cpu = imflow::kernels::measure_sources(item.pixels.view(), item.labels.data(), *item.nlabels, background);
  check_catalog(*item.catalog, cpu);
  check_new_columns(*item.catalog, cpu);
}

// Timings on a 4096 x 4096 sky (hidden: run with "[mesh_bench]"): the mesh background alone and
// the whole detection (mesh, segment on the rms map, label, measure), CUDA events, and the CPU
// kernel single-threaded for the ratio.
TEST_CASE("mesh background timings on 4096 x 4096", "[.][mesh_bench]") {
  Slot slot;
  WorkItem item;
  fill_gradient_sky(item, 4096, 4096, 7, false);
  const auto params = mesh_params(64, 3);
  imflow::cuda::Event start(true), stop(true);
  auto time_ms = [&](const std::function<void(GpuContext&)>& steps, int repeat) {
    imflow::cuda::enqueue_upload(slot.gpu, item);
    steps(slot.gpu);  // warm-up (allocations)
    slot.stream.synchronize();
    start.record(slot.stream);
    for (int i = 0; i < repeat; ++i) steps(slot.gpu);
    stop.record(slot.stream);
    stop.synchronize();
    return imflow::cuda::Event::elapsed_ms(start, stop) / repeat;
  };
  const double mesh_ms = time_ms([&](GpuContext& gpu) { imflow::cuda::background_mesh(gpu, params); }, 20);
  const double detect_ms = time_ms(
      [&](GpuContext& gpu) {
        imflow::cuda::background_mesh(gpu, params);
        imflow::cuda::segment(gpu, 1.5, imflow::cuda::Threshold::rms_map);
        imflow::cuda::label(gpu, 8);
        imflow::cuda::measure(gpu);
      },
      20);
  std::vector<float> back, rms;
  const auto t0 = std::chrono::steady_clock::now();
  imflow::kernels::mesh_background(item.pixels.view(), params, back, rms);
  const double cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("mesh_bench 4096x4096: GPU mesh background %.3f ms, GPU mesh+segment+label+measure %.3f ms, "
              "CPU mesh background (1 thread) %.1f ms\n", mesh_ms, detect_ms, cpu_ms);
  CHECK(mesh_ms > 0.0);
}

// Small enough for compute-sanitizer (tools/gpu/sanitize.sh runs the [sanitize] set): partial
// meshes, dropped meshes (NaN block), both filter sizes, both thresholds.
TEST_CASE("sanitize set: mesh background, segment against the maps, measure", "[gpu][sanitize][mesh]") {
  Slot slot;
  WorkItem item;
  fill_gradient_sky(item, 200, 150, 17u, true);
  check_mesh_pipeline(slot, item, mesh_params(32, 3), 1.5, imflow::cuda::Threshold::rms_map);
  fill_gradient_sky(item, 100, 70, 18u, false);
  check_mesh_pipeline(slot, item, mesh_params(64, 1), 3.0, imflow::cuda::Threshold::background);
}
