// The detection steps with deblending, as the engine runs them (segment with compare: float32,
// label with connectivity 8, deblend, measure), on the GPU and on the CPU: the same mask, objects,
// label map and catalog. The CPU runs on the GPU's background (its global statistics, or its mesh
// maps), so that a last-bit background difference cannot move a pixel across the threshold.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuda/background_mesh.hpp"
#include "deblend_check.hpp"
#include "gpu_test_helpers.hpp"
#include "imflow/kernels/deblend.hpp"
#include "imflow/pipeline.hpp"
#include "test_helpers.hpp"

using namespace gpu_test;

namespace {

// A crowded field (stars with close companions on unit noise) on a sky with a pedestal and a gradient.
void fill_crowded(WorkItem& item, int64_t w, int64_t h, uint32_t seed, int stars) {
  const deblend_test::Field f = deblend_test::stars(seed, w, h, stars, true, false);
  make_pinned(item, w, h);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const size_t i = static_cast<size_t>(y * w + x);
      item.pixels.data()[i] = f.image[i] + 100.0f + static_cast<float>(0.01 * x - 0.02 * y);
    }
}

void check_objects(const imflow::kernels::DeblendResult& gpu, const imflow::kernels::DeblendResult& cpu) {
  CHECK(gpu.segments == cpu.segments);
  CHECK(gpu.segments_split == cpu.segments_split);
  CHECK(gpu.objects_cleaned == cpu.objects_cleaned);
  REQUIRE(gpu.objects.size() == cpu.objects.size());
  for (size_t i = 0; i < cpu.objects.size(); ++i) {
    INFO("object " << i + 1);
    const auto &g = gpu.objects[i], &c = cpu.objects[i];
    CHECK(g.segment == c.segment);
    CHECK(g.blended == c.blended);
    CHECK(g.truncated == c.truncated);
    CHECK(g.merged == c.merged);
    CHECK(std::memcmp(&g.x, &c.x, sizeof g.x) == 0);
    CHECK(std::memcmp(&g.y, &c.y, sizeof g.y) == 0);
    CHECK(g.npix == c.npix);
    CHECK(std::memcmp(&g.flux, &c.flux, sizeof g.flux) == 0);
  }
}

// `steps` (YAML) on the GPU, then its steps after the background on the CPU with the GPU's
// background; every result compared.
void check_steps(Slot& slot, const WorkItem& input, const std::string& steps) {
  const imflow::Pipeline pipeline = test::pipeline_from("device: cuda\nsteps: " + steps + "\n");
  WorkItem gpu_item;
  make_pinned(gpu_item, input.pixels.width(), input.pixels.height());
  std::copy(input.pixels.begin(), input.pixels.end(), gpu_item.pixels.begin());
  run_item(slot, gpu_item, [&](GpuContext& gpu) {
    for (const auto& step : pipeline.steps) step->run_cuda(gpu_item, gpu);
  });
  const size_t n = static_cast<size_t>(gpu_item.pixels.size());
  WorkItem cpu_item;
  cpu_item.pixels.resize(input.pixels.width(), input.pixels.height());
  std::copy(input.pixels.begin(), input.pixels.end(), cpu_item.pixels.begin());
  REQUIRE(gpu_item.background.has_value());
  cpu_item.background = gpu_item.background;
  if (slot.gpu.has_background_maps) {
    cpu_item.background_map = from_device(slot.gpu.mesh_background->back_map.data(), n);
    cpu_item.rms_map = from_device(slot.gpu.mesh_background->rms_map.data(), n);
  }
  for (const auto& step : pipeline.steps)
    if (step->name() != "background") step->run_cpu(cpu_item);

  CHECK(*gpu_item.threshold == *cpu_item.threshold);
  CHECK(gpu_item.mask == cpu_item.mask);
  REQUIRE(gpu_item.deblend);
  REQUIRE(cpu_item.deblend);
  check_objects(*gpu_item.deblend, *cpu_item.deblend);
  CHECK(*gpu_item.nlabels == *cpu_item.nlabels);
  CHECK(gpu_item.labels == cpu_item.labels);
  for (const char* metric : {"deblend_segments", "deblend_split", "deblend_cleaned"})
    CHECK(gpu_item.metrics[metric] == cpu_item.metrics[metric]);
  REQUIRE(gpu_item.catalog.has_value());
  check_catalog(*gpu_item.catalog, *cpu_item.catalog);
  int64_t blended = 0, edge = 0;
  for (size_t i = 0; i < cpu_item.catalog->size(); ++i) {
    INFO("source " << i + 1);
    const auto &g = (*gpu_item.catalog)[i], &c = (*cpu_item.catalog)[i];
    CHECK(g.flags == c.flags);
    blended += (c.flags & imflow::kFlagDeblended) != 0;
    edge += (c.flags & imflow::kFlagEdge) != 0;
  }
  std::printf("deblend steps %lldx%lld: %zu objects, %lld from blends, %lld on the edge, %lld cleaned\n",
              static_cast<long long>(input.pixels.width()), static_cast<long long>(input.pixels.height()),
              cpu_item.catalog->size(), static_cast<long long>(blended), static_cast<long long>(edge),
              static_cast<long long>(cpu_item.deblend->objects_cleaned));
  CHECK(blended > 0);
}

const char* kMesh = "[{background: {method: mesh, size: 64, filter_size: 3}}, "
                    "{segment: {nsigma: 1.5, relative_to: background, compare: float32}}, {label: {connectivity: 8}}, "
                    "{deblend: {nthresh: 32, mincont: 0.005}}, {measure: {gain: 2}}]";
const char* kMeshRms = "[{background: {method: mesh, size: 32, filter_size: 3}}, "
                       "{segment: {nsigma: 2, relative_to: rms_map, compare: float32}}, {label: {connectivity: 8}}, "
                       "{deblend: {nthresh: 16, mincont: 0.01, clean: false, minarea: 3}}, measure]";
const char* kMeshSextractor = "[{background: {method: mesh, size: 64, filter_size: 3}}, "
                             "{segment: {nsigma: 1.5, relative_to: background, compare: float32}}, "
                             "{label: {connectivity: 8}}, {deblend: {clean_style: sextractor, draws: sextractor}}, measure]";
const char* kGlobal = "[background, {segment: {nsigma: 2, compare: float32}}, {label: {connectivity: 8}}, "
                      "{deblend: {clean_param: 1.5}}, measure]";

}  // namespace

TEST_CASE("GPU segment (float32), label, deblend, measure equal the CPU steps", "[gpu][deblend][pipeline]") {
  Slot slot;
  const uint32_t seed = fresh_seed("gpu deblend steps");
  struct Case {
    int64_t w, h;
    int stars;
  };
  for (const Case c : {Case{600, 450, 300}, Case{1024, 1024, 1500}, Case{317, 700, 200}, Case{2048, 2048, 5000}}) {
    WorkItem item;
    fill_crowded(item, c.w, c.h, seed + static_cast<uint32_t>(c.w), c.stars);
    for (const char* steps : {kMesh, kMeshRms, kGlobal, kMeshSextractor}) {
      INFO(c.w << "x" << c.h << " seed " << seed + static_cast<uint32_t>(c.w) << " steps " << steps);
      check_steps(slot, item, steps);
    }
  }
}

TEST_CASE("GPU deblend: the catalog overflow path measures the objects on the host", "[gpu][deblend][measure]") {
  Slot slot;
  WorkItem item;
  fill_crowded(item, 500, 400, 11, 300);
  imflow::cuda::set_catalog_capacity(slot.gpu, 8);
  check_steps(slot, item, kMesh);
}

TEST_CASE("GPU deblend on a field without sources", "[gpu][deblend]") {
  Slot slot;
  WorkItem item;
  make_pinned(item, 300, 200);
  std::fill(item.pixels.begin(), item.pixels.end(), 5.0f);
  const imflow::Pipeline pipeline = test::pipeline_from(std::string("device: cuda\nsteps: ") + kGlobal + "\n");
  run_item(slot, item, [&](GpuContext& gpu) {
    for (const auto& step : pipeline.steps) step->run_cuda(item, gpu);
  });
  CHECK(*item.nlabels == 0);
  REQUIRE(item.deblend);
  CHECK(item.deblend->objects.empty());
  CHECK(item.catalog->empty());
}
