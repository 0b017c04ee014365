// cuda::deblend against kernels::deblend_sources, for tests/gpu/test_gpu_deblend.cpp and the
// sanitize set: synthetic fields (Gaussian stars on noise, close pairs, a crowded pedestal, a
// large galaxy), the label map and threshold as SEP sees them, and a comparison that prints
// where GPU and CPU first differ (object counts, the first differing object and pixel).
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/buffers.hpp"
#include "cuda/deblend.hpp"
#include "cuda/stream.hpp"
#include "imflow/kernels/deblend.hpp"
#include "imflow/kernels/label.hpp"

namespace deblend_test {

using imflow::kernels::DeblendAllocation;
using imflow::kernels::DeblendCleanStyle;
using imflow::kernels::DeblendParams;
using imflow::kernels::DeblendResult;

// Background-subtracted detection values, an optional threshold map and the scalar threshold,
// and optional unfiltered values (SEP's `value` when the detection image is filtered).
struct Field {
  int64_t w = 0, h = 0;
  std::vector<float> image, threshold_map, measurement;
  float threshold = 1.5f;
};

// The field's values smoothed by a 3 x 3 box as the detection image, the values themselves as
// the measurement.
inline Field filtered(const Field& f) {
  Field g = f;
  g.measurement = f.image;
  for (int64_t y = 0; y < f.h; ++y)
    for (int64_t x = 0; x < f.w; ++x) {
      float sum = 0.0f;
      for (int64_t dy = -1; dy <= 1; ++dy)
        for (int64_t dx = -1; dx <= 1; ++dx) {
          const int64_t xx = std::clamp<int64_t>(x + dx, 0, f.w - 1), yy = std::clamp<int64_t>(y + dy, 0, f.h - 1);
          sum += f.image[static_cast<size_t>(yy * f.w + xx)];
        }
      g.image[static_cast<size_t>(y * f.w + x)] = sum / 9.0f;
    }
  return g;
}

inline void add_star(Field& f, double cx, double cy, double amp, double sigma) {
  const int64_t r = static_cast<int64_t>(6 * sigma) + 1;
  for (int64_t y = std::max<int64_t>(0, static_cast<int64_t>(cy) - r); y < std::min(f.h, static_cast<int64_t>(cy) + r + 1); ++y)
    for (int64_t x = std::max<int64_t>(0, static_cast<int64_t>(cx) - r); x < std::min(f.w, static_cast<int64_t>(cx) + r + 1); ++x)
      f.image[static_cast<size_t>(y * f.w + x)] +=
          static_cast<float>(amp * std::exp(-((x - cx) * (x - cx) + (y - cy) * (y - cy)) / (2 * sigma * sigma)));
}

inline Field noise(int64_t w, int64_t h, std::mt19937& rng) {
  Field f;
  f.w = w;
  f.h = h;
  f.image.resize(static_cast<size_t>(w * h));
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (float& v : f.image) v = g(rng);
  return f;
}

// Stars on unit noise; with `pairs`, each has a companion 2-8 px away at a flux ratio of 1 to
// 1/100; with `threshold_map`, a threshold varying across the field.
inline Field stars(uint32_t seed, int64_t w, int64_t h, int count, bool pairs, bool threshold_map) {
  std::mt19937 rng(seed);
  Field f = noise(w, h, rng);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int s = 0; s < count; ++s) {
    const double cx = u(rng) * w, cy = u(rng) * h, amp = 5 + 300 * std::pow(u(rng), 3), sigma = 0.8 + 2.5 * u(rng);
    add_star(f, cx, cy, amp, sigma);
    if (pairs) {
      const double d = 2 + 6 * u(rng), angle = u(rng) * 6.283185307, ratio = std::pow(10.0, -2 * u(rng));
      add_star(f, cx + d * std::cos(angle), cy + d * std::sin(angle), amp * ratio, sigma * (0.7 + 0.6 * u(rng)));
    }
  }
  if (threshold_map) {
    f.threshold_map.resize(f.image.size());
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        f.threshold_map[static_cast<size_t>(y * w + x)] = 1.5f * static_cast<float>(1.0 + 0.3 * std::sin(x * 0.05) * std::cos(y * 0.07));
  }
  return f;
}

// A broad pedestal (peak `pedestal`, sigma w / 4) with nx x ny stars `spacing` apart on it: one
// segment holding them all when the threshold is under the pedestal.
inline Field crowd(int64_t w, int64_t h, int nx, int ny, double spacing, double pedestal, uint32_t seed) {
  std::mt19937 rng(seed);
  Field f = noise(w, h, rng);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double cx0 = w / 2.0, cy0 = h / 2.0;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const double r2 = ((x - cx0) * (x - cx0) + (y - cy0) * (y - cy0)) / (0.25 * w * w);
      f.image[static_cast<size_t>(y * w + x)] += static_cast<float>(pedestal * std::exp(-2 * r2));
    }
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i)
      add_star(f, cx0 + (i - nx / 2.0) * spacing + u(rng), cy0 + (j - ny / 2.0) * spacing + u(rng), 20 + 200 * u(rng),
               1.0 + 0.5 * u(rng));
  return f;
}

// The pedestal with nine bright stars in it: a segment of more than 10^6 pixels at threshold 1
// (1300 x 1300), split into a few objects with ~10^6 pixels drawn for.
inline Field galaxy(int64_t w, int64_t h, uint32_t seed) {
  Field f = crowd(w, h, 10, 10, 60.0, 40.0, seed);
  std::mt19937 rng(seed + 1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 3; ++i)
      add_star(f, w / 2.0 + (i - 1) * 200 + 20 * u(rng), h / 2.0 + (j - 1) * 200 + 20 * u(rng), 3000 + 5000 * u(rng),
               2.5 + 1.5 * u(rng));
  f.threshold = 1.0f;
  return f;
}

// SEP's segments: 8-connected groups of pixels above the threshold.
inline std::vector<int32_t> segments(const Field& f, int32_t& nlabels) {
  std::vector<uint8_t> mask(f.image.size());
  for (size_t i = 0; i < mask.size(); ++i)
    mask[i] = std::isfinite(f.image[i]) && f.image[i] > (f.threshold_map.empty() ? f.threshold : f.threshold_map[i]);
  std::vector<int32_t> labels(f.image.size());
  nlabels = imflow::kernels::label_components({mask.data(), f.w, f.h}, 8, labels.data());
  return labels;
}

template <typename T>
imflow::cuda::DeviceBuffer<T> upload(const std::vector<T>& host) {
  imflow::cuda::DeviceBuffer<T> d(std::max<size_t>(1, host.size()));
  IMFLOW_CUDA_CHECK(cudaMemcpy(d.data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// How the GPU is given n and the threshold.
struct Variant {
  bool nlabels_on_device = false;
  bool threshold_on_device = false;
};

inline std::string describe(const DeblendParams& p) {
  char text[160];
  std::snprintf(text, sizeof text, "nthresh %d mincont %g minarea %d clean %d (%g) %s", p.nthresh, p.mincont, p.minarea,
                p.clean ? 1 : 0, p.clean_param, p.allocation == DeblendAllocation::sep_random ? "sep_random" : "most_probable");
  return text;
}

// Deblends `f` on the CPU and on the GPU (workspace and stream reused by the caller) and requires
// identical label maps, records and counts. Prints one line per case; on a mismatch, where.
inline void check(const char* name, const Field& f, const DeblendParams& params, imflow::cuda::DeblendWorkspace& workspace,
                  imflow::cuda::Stream& stream, Variant variant = {}) {
  INFO(name << ": " << f.w << "x" << f.h << ", " << describe(params));
  int32_t nlabels = 0;
  const std::vector<int32_t> labels = segments(f, nlabels);
  const size_t n = f.image.size();
  imflow::kernels::DeblendInput input;
  input.detection = {f.image.data(), f.w, f.h};
  input.measurement = f.measurement.empty() ? nullptr : f.measurement.data();
  input.threshold_map = f.threshold_map.empty() ? nullptr : f.threshold_map.data();
  input.threshold = f.threshold;
  input.labels = labels.data();
  input.nlabels = nlabels;
  std::vector<int32_t> cpu_map(n);
  const auto t0 = std::chrono::steady_clock::now();
  const DeblendResult cpu = imflow::kernels::deblend_sources(input, params, cpu_map.data());
  const auto t1 = std::chrono::steady_clock::now();

  auto d_image = upload(f.image);
  auto d_measurement = upload(f.measurement);
  auto d_threshold_map = upload(f.threshold_map);
  auto d_labels = upload(labels);
  imflow::cuda::DeviceBuffer<int32_t> d_out(std::max<size_t>(1, n));
  imflow::cuda::DeviceBuffer<int32_t> d_count(1);
  imflow::cuda::DeviceBuffer<double> d_threshold(1);
  const double threshold_value = f.threshold;
  IMFLOW_CUDA_CHECK(cudaMemcpy(d_count.data(), &nlabels, sizeof nlabels, cudaMemcpyHostToDevice));
  IMFLOW_CUDA_CHECK(cudaMemcpy(d_threshold.data(), &threshold_value, sizeof threshold_value, cudaMemcpyHostToDevice));
  imflow::cuda::DeviceBuffer<int32_t> d_objects(1);
  imflow::cuda::DeblendDeviceInput gin;
  gin.width = f.w;
  gin.height = f.h;
  gin.detection = d_image.data();
  gin.measurement = f.measurement.empty() ? nullptr : d_measurement.data();
  gin.threshold_map = f.threshold_map.empty() ? nullptr : d_threshold_map.data();
  gin.threshold = variant.threshold_on_device ? -12345.0f : f.threshold;
  gin.threshold_device = variant.threshold_on_device ? d_threshold.data() : nullptr;
  gin.labels = d_labels.data();
  gin.nlabels_device = variant.nlabels_on_device ? d_count.data() : nullptr;
  gin.nlabels = variant.nlabels_on_device ? 0 : nlabels;
  const auto t2 = std::chrono::steady_clock::now();
  imflow::cuda::deblend(gin, params, d_out.data(), d_objects.data(), stream.get(), workspace);
  stream.synchronize();
  const auto t3 = std::chrono::steady_clock::now();
  const DeblendResult gpu = workspace.result();
  std::vector<int32_t> gpu_map(n);
  int32_t gpu_count = -1;
  IMFLOW_CUDA_CHECK(cudaMemcpy(gpu_map.data(), d_out.data(), n * sizeof(int32_t), cudaMemcpyDeviceToHost));
  IMFLOW_CUDA_CHECK(cudaMemcpy(&gpu_count, d_objects.data(), sizeof gpu_count, cudaMemcpyDeviceToHost));

  int64_t differing = 0, first = -1;
  for (size_t i = 0; i < n; ++i)
    if (cpu_map[i] != gpu_map[i]) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++differing;
    }
  size_t first_object = SIZE_MAX;
  for (size_t i = 0; i < std::min(cpu.objects.size(), gpu.objects.size()) && first_object == SIZE_MAX; ++i) {
    const auto &c = cpu.objects[i], &g = gpu.objects[i];
    if (c.segment != g.segment || c.blended != g.blended || c.truncated != g.truncated || c.merged != g.merged ||
        std::memcmp(&c.x, &g.x, sizeof c.x) != 0 ||
        std::memcmp(&c.y, &g.y, sizeof c.y) != 0 || std::memcmp(&c.thresh, &g.thresh, sizeof c.thresh) != 0 ||
        c.npix != g.npix || std::memcmp(&c.flux, &g.flux, sizeof c.flux) != 0)
      first_object = i;
  }
  std::printf("deblend %-26s %5lldx%-5lld labels %6d | objects cpu %6zu gpu %6zu, split %lld/%lld, cleaned %lld/%lld, "
              "draws %lld/%lld | pixels differing %lld | cpu %.3f s, gpu %.3f s (%d on the host)\n",
              name, static_cast<long long>(f.w), static_cast<long long>(f.h), nlabels, cpu.objects.size(), gpu.objects.size(),
              static_cast<long long>(cpu.segments_split), static_cast<long long>(gpu.segments_split),
              static_cast<long long>(cpu.objects_cleaned), static_cast<long long>(gpu.objects_cleaned),
              static_cast<long long>(cpu.random_draws), static_cast<long long>(gpu.random_draws),
              static_cast<long long>(differing), std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t3 - t2).count(), workspace.host_splits());
  if (first >= 0) {
    std::printf("  first differing pixel (%lld, %lld): cpu %d gpu %d (segment %d)\n", static_cast<long long>(first % f.w),
                static_cast<long long>(first / f.w), cpu_map[static_cast<size_t>(first)], gpu_map[static_cast<size_t>(first)],
                labels[static_cast<size_t>(first)]);
  }
  if (first_object != SIZE_MAX) {
    const auto &c = cpu.objects[first_object], &g = gpu.objects[first_object];
    std::printf("  first differing object %zu: cpu segment %d blended %d x %.17g y %.17g thresh %.9g npix %lld flux %.9g\n"
                "                              gpu segment %d blended %d x %.17g y %.17g thresh %.9g npix %lld flux %.9g\n",
                first_object + 1, c.segment, c.blended ? 1 : 0, c.x, c.y, static_cast<double>(c.thresh),
                static_cast<long long>(c.npix), static_cast<double>(c.flux), g.segment, g.blended ? 1 : 0, g.x, g.y,
                static_cast<double>(g.thresh), static_cast<long long>(g.npix), static_cast<double>(g.flux));
  }
  std::fflush(stdout);
  CHECK(gpu.segments == cpu.segments);
  CHECK(gpu.segments_split == cpu.segments_split);
  CHECK(gpu.objects_cleaned == cpu.objects_cleaned);
  CHECK(gpu.random_draws == cpu.random_draws);
  CHECK(gpu.objects.size() == cpu.objects.size());
  CHECK(gpu_count == static_cast<int32_t>(cpu.objects.size()));
  CHECK(first_object == SIZE_MAX);
  CHECK(differing == 0);
}

}  // namespace deblend_test
