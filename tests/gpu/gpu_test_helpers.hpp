// Shared fixtures of the GPU tests: a slot (stream + context), pinned items, synthetic images,
// the CPU pipeline as the reference, and catalog comparison.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "cuda/background.hpp"
#include "cuda/convolve.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/gpu_context.hpp"
#include "cuda/label.hpp"
#include "cuda/measure.hpp"
#include "cuda/resources.hpp"
#include "cuda/segment.hpp"
#include "imflow/kernels/background.hpp"
#include "imflow/kernels/convolve.hpp"
#include "imflow/kernels/label.hpp"
#include "imflow/kernels/measure.hpp"
#include "imflow/kernels/segment.hpp"

namespace gpu_test {

using imflow::GpuContext;
using imflow::WorkItem;

// One engine slot: a stream and the context that uses it.
struct Slot {
  imflow::cuda::Stream stream;
  GpuContext gpu{0, stream.get()};
};

inline void make_pinned(WorkItem& item, int64_t width, int64_t height) {
  item.pixels.set_allocator(imflow::cuda::pinned_allocator());
  item.pixels.resize(width, height);
}

// n floats of device memory, on the host.
inline std::vector<float> from_device(const float* device, size_t n) {
  std::vector<float> out(n);
  if (n > 0) IMFLOW_CUDA_CHECK(cudaMemcpy(out.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost));
  return out;
}

// ||a - b|| / ||b|| over n values (||a - b|| where b is all zero), in double.
inline double rel_diff(const float* a, const float* b, size_t n) {
  double d = 0.0, r = 0.0;
  for (size_t i = 0; i < n; ++i) {
    d += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    r += double(b[i]) * b[i];
  }
  return r > 0.0 ? std::sqrt(d / r) : std::sqrt(d);
}

// A fresh seed per run (std::random_device), printed so that a failure can be reproduced by
// running again with IMFLOW_TEST_SEED set to it.
inline uint32_t fresh_seed(const char* what) {
  const char* env = std::getenv("IMFLOW_TEST_SEED");
  const uint32_t seed = env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : std::random_device{}();
  std::printf("%s: seed %u (IMFLOW_TEST_SEED=%u reproduces it)\n", what, seed, seed);
  std::fflush(stdout);
  return seed;
}

// Background level 365 +- 37 (like the ISAAC crop), `sources` Gaussian blobs, a few NaN/Inf.
inline void fill_sky(WorkItem& item, int64_t width, int64_t height, uint32_t seed, int sources = 20,
                     double nan_fraction = 0.001) {
  make_pinned(item, width, height);
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(365.0f, 37.0f);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  float* p = item.pixels.data();
  for (int64_t i = 0; i < width * height; ++i) p[i] = noise(rng);
  for (int s = 0; s < sources; ++s) {
    const double cx = u(rng) * width, cy = u(rng) * height, amp = 200 + 3000 * u(rng), sig = 0.7 + 2.5 * u(rng);
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) {
        const double r2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
        if (r2 < 36 * sig * sig) p[y * width + x] += static_cast<float>(amp * std::exp(-r2 / (2 * sig * sig)));
      }
  }
  for (int64_t i = 0; i < width * height; ++i) {
    const double r = u(rng);
    if (r < nan_fraction) p[i] = NAN;
    else if (r < nan_fraction * 1.2) p[i] = (i % 2) ? INFINITY : -INFINITY;
  }
}

// What the CPU kernels make of an image: the reference for every GPU result.
struct CpuResult {
  imflow::BackgroundStats background;
  double threshold = 0.0;
  std::vector<uint8_t> mask;
  std::vector<int32_t> labels;
  int32_t nlabels = 0;
  imflow::Catalog catalog;
};

inline CpuResult cpu_pipeline(imflow::ConstImageView image, imflow::ConstImageView detection, double kappa,
                              int max_iters, double threshold, int connectivity) {
  CpuResult r;
  std::vector<float> work;
  // As the background step: the statistics of the detection image (the convolved one, if any).
  r.background = imflow::kernels::kappa_sigma_clip(detection, kappa, max_iters, work);
  r.threshold = threshold;
  const size_t n = static_cast<size_t>(image.size());
  r.mask.assign(n, 0);
  r.labels.assign(n, 0);
  imflow::kernels::threshold_mask(detection, threshold, r.mask.data());
  r.nlabels = imflow::kernels::label_components({r.mask.data(), image.width, image.height}, connectivity,
                                                r.labels.data());
  imflow::kernels::MeasureBackground level;  // as cuda::measure after cuda::background: w = value - median
  level.level = r.background.median;
  level.rms = r.background.std;  // the error columns' noise
  r.catalog = imflow::kernels::measure_sources(image, r.labels.data(), r.nlabels, level);
  return r;
}

inline void check_background(const imflow::BackgroundStats& gpu, const imflow::BackgroundStats& cpu) {
  CHECK(gpu.valid == cpu.valid);
  CHECK(gpu.iterations == cpu.iterations);
  CHECK(gpu.kept == cpu.kept);
  if (std::isnan(cpu.median)) {
    CHECK(std::isnan(gpu.median));
    CHECK(std::isnan(gpu.std));
    return;
  }
  CHECK(gpu.median == cpu.median);
  CHECK(gpu.std == Approx(cpu.std).epsilon(1e-6).margin(1e-300));
}

inline void check_catalog(const imflow::Catalog& gpu, const imflow::Catalog& cpu) {
  REQUIRE(gpu.size() == cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    INFO("source " << i + 1);
    const auto &g = gpu[i], &c = cpu[i];
    CHECK(g.id == c.id);
    CHECK(g.npix == c.npix);
    // A zero-flux segment has a NaN centroid on both sides (SciPy's center_of_mass too).
    CHECK(std::isnan(g.x) == std::isnan(c.x));
    CHECK(std::isnan(g.y) == std::isnan(c.y));
    CHECK(g.flux == Approx(c.flux).epsilon(1e-9));
    if (!std::isnan(c.x)) CHECK(g.x == Approx(c.x).margin(1e-6));
    if (!std::isnan(c.y)) CHECK(g.y == Approx(c.y).margin(1e-6));
    CHECK(g.peak == c.peak);
    CHECK(g.peak_x == c.peak_x);
    CHECK(g.peak_y == c.peak_y);
    CHECK(g.xmin == c.xmin);
    CHECK(g.xmax == c.xmax);
    CHECK(g.ymin == c.ymin);
    CHECK(g.ymax == c.ymax);
    CHECK(g.flags == c.flags);  // the edge, and a non-finite pixel beside the source (fill_sky has some)
    // Both sides take moments about the source's first pixel: equal to summation order (about
    // the image centre, the GPU's lost ~8 digits on wide images).
    const auto close = [](double a, double b) {
      return (std::isnan(a) && std::isnan(b)) || std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-9;
    };
    CHECK(close(g.flux_iso, c.flux_iso));
    CHECK(close(g.x2, c.x2));
    CHECK(close(g.y2, c.y2));
    CHECK(close(g.xy, c.xy));
    // The error columns: the GPU's std (or RMS map) may differ from the CPU's in the last float
    // digits; the centroid covariance and cxy at the scale of their diagonals.
    const auto near = [](double a, double b, double scale) {
      return (std::isnan(a) && std::isnan(b)) || std::abs(a - b) <= 1e-5 * std::max({std::abs(a), std::abs(b), scale});
    };
    CHECK(std::isnan(c.flux_iso_err) == false);
    CHECK(near(g.flux_iso_err, c.flux_iso_err, 0.0));
    const double error_scale = std::abs(c.errx2) + std::abs(c.erry2);
    CHECK(near(g.errx2, c.errx2, error_scale));
    CHECK(near(g.erry2, c.erry2, error_scale));
    CHECK(near(g.errxy, c.errxy, error_scale));
    const double ellipse_scale = std::abs(c.cxx) + std::abs(c.cyy);
    CHECK(near(g.cxx, c.cxx, ellipse_scale));
    CHECK(near(g.cyy, c.cyy, ellipse_scale));
    CHECK(near(g.cxy, c.cxy, ellipse_scale));
  }
}

// Upload, enqueue `steps`, download, wait, collect: what the engine does for one item.
inline void run_item(Slot& slot, WorkItem& item, const std::function<void(GpuContext&)>& steps,
                     imflow::cuda::DownloadWants wants = {true, true, true, false}) {
  imflow::cuda::enqueue_upload(slot.gpu, item);
  steps(slot.gpu);
  imflow::cuda::enqueue_download(slot.gpu, wants);
  slot.stream.synchronize();
  imflow::cuda::collect_results(slot.gpu, item);
}

// The whole seed pipeline on the GPU and the CPU, compared step by step.
inline void check_pipeline(Slot& slot, WorkItem& item, double kappa, int max_iters, double nsigma, int connectivity,
                           bool relative_to_zero = false) {
  run_item(slot, item, [&](GpuContext& gpu) {
    imflow::cuda::background(gpu, kappa, max_iters);
    imflow::cuda::segment(gpu, nsigma, relative_to_zero);
    imflow::cuda::label(gpu, connectivity);
    imflow::cuda::measure(gpu);
  });
  REQUIRE(item.background.has_value());
  REQUIRE(item.threshold.has_value());
  const auto view = item.pixels.view();
  // The CPU segments at the GPU's threshold so that a last-bit difference in std cannot move a
  // pixel across it; the threshold itself is checked against the CPU's stats.
  const CpuResult cpu = cpu_pipeline(view, view, kappa, max_iters, *item.threshold, connectivity);
  check_background(*item.background, cpu.background);
  const double expected = (relative_to_zero ? 0.0 : cpu.background.median) + nsigma * cpu.background.std;
  if (std::isnan(expected)) {
    CHECK(std::isnan(*item.threshold));
  } else {
    CHECK(*item.threshold == Approx(expected).epsilon(1e-9).margin(1e-9));
  }
  CHECK(item.mask == cpu.mask);
  REQUIRE(item.nlabels.has_value());
  CHECK(*item.nlabels == cpu.nlabels);
  CHECK(item.labels == cpu.labels);
  REQUIRE(item.catalog.has_value());
  check_catalog(*item.catalog, cpu.catalog);
}

}  // namespace gpu_test
