// GPU convolution vs the CPU (float64): same and full modes within 1e-5 of the output's largest
// magnitude; separable (rank-1), tiled and direct paths, fresh seeds, NaN, detection images; SEP's
// arithmetic (cuda::convolve_sep) equal to kernels::sep_convolve bit for bit.
#include <cstring>
#include <tuple>

#include "gpu_test_helpers.hpp"
#include "imflow/kernels/sep_filter.hpp"

using namespace gpu_test;
using imflow::kernels::ConvolveMode;

namespace {

std::vector<float> random_kernel(int kw, int kh, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 1.0f);
  std::vector<float> k(static_cast<size_t>(kw) * kh);
  for (auto& v : k) v = u(rng);
  return k;
}

void check_convolve(Slot& slot, WorkItem& item, const float* kernel, int kw, int kh, ConvolveMode mode,
                    bool allow_separable = true) {
  const int64_t w = item.pixels.width(), h = item.pixels.height();
  INFO(w << "x" << h << " kernel " << kw << "x" << kh << (mode == ConvolveMode::full ? " full" : " same")
         << (allow_separable ? "" : " general"));
  const int64_t ow = imflow::kernels::convolved_width(w, kw, mode);
  const int64_t oh = imflow::kernels::convolved_height(h, kh, mode);
  imflow::ImageBuffer expected;
  expected.resize(ow, oh);
  if (allow_separable)  // the CPU's own separable path for rank-1 kernels (checked against the general one)
    imflow::kernels::convolve2d(item.pixels.view(), {kernel, kw, kh}, mode, expected.view());
  else
    imflow::kernels::convolve2d_general(item.pixels.view(), {kernel, kw, kh}, mode, expected.view());

  WorkItem out;
  make_pinned(out, w, h);
  std::copy(item.pixels.begin(), item.pixels.end(), out.pixels.begin());
  run_item(slot, out, [&](GpuContext& gpu) { imflow::cuda::convolve(gpu, kernel, kw, kh, mode, false, allow_separable); },
           {false, false, false, true});
  REQUIRE(out.pixels.width() == ow);
  REQUIRE(out.pixels.height() == oh);
  double largest = 0.0;
  for (float v : expected)
    if (std::isfinite(v)) largest = std::max(largest, std::abs(static_cast<double>(v)));
  const double tolerance = 1e-5 * std::max(largest, 1e-30);
  int64_t bad = 0;
  for (int64_t i = 0; i < ow * oh; ++i) {
    const float e = expected.data()[i], g = out.pixels.data()[i];
    if (std::isnan(e) != std::isnan(g) || (!std::isnan(e) && std::abs(static_cast<double>(e) - g) > tolerance)) ++bad;
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("GPU convolution matches the CPU", "[gpu][convolve]") {
  Slot slot;
  WorkItem item;
  imflow::ImageBuffer lesson;
  imflow::kernels::lesson_gaussian_kernel(lesson);
  imflow::ImageBuffer gauss;
  imflow::kernels::gaussian_kernel(5, 1.2, gauss);
  const auto odd = random_kernel(7, 4, 1);
  const int64_t sizes[][2] = {{217, 181}, {256, 256}, {1, 1}, {1, 50}, {50, 1}, {33, 65}};
  uint32_t seed = 40;
  for (const auto& s : sizes) {
    fill_sky(item, s[0], s[1], seed++, 5, 0.0);
    for (ConvolveMode mode : {ConvolveMode::same, ConvolveMode::full}) {
      check_convolve(slot, item, lesson.data(), 15, 15, mode);
      check_convolve(slot, item, lesson.data(), 15, 15, mode, false);  // the general path too
      check_convolve(slot, item, gauss.data(), 5, 5, mode);
      check_convolve(slot, item, odd.data(), 7, 4, mode);
      check_convolve(slot, item, odd.data(), 4, 7, mode);
    }
  }
}

TEST_CASE("GPU convolution: huge kernels, NaN pixels", "[gpu][convolve]") {
  Slot slot;
  WorkItem item;
  fill_sky(item, 70, 45, 3, 3, 0.0);
  const auto big = random_kernel(121, 99, 2);   // tiled, shared memory above 48 KB
  const auto huge = random_kernel(201, 201, 3); // direct kernel: tile does not fit
  for (ConvolveMode mode : {ConvolveMode::same, ConvolveMode::full}) {
    check_convolve(slot, item, big.data(), 121, 99, mode);
    check_convolve(slot, item, huge.data(), 201, 201, mode);
  }
  fill_sky(item, 97, 61, 4, 3, 0.01);  // NaN and Inf propagate as on the CPU
  imflow::ImageBuffer gauss;
  imflow::kernels::gaussian_kernel(5, 1.0, gauss);
  check_convolve(slot, item, gauss.data(), 5, 5, ConvolveMode::same);
}

TEST_CASE("GPU convolution into the detection image drives segmentation", "[gpu][convolve]") {
  Slot slot;
  WorkItem item;
  fill_sky(item, 300, 200, 8, 30);
  imflow::ImageBuffer gauss;
  imflow::kernels::gaussian_kernel(5, 1.5, gauss);
  run_item(slot, item, [&](GpuContext& gpu) {
    imflow::cuda::convolve(gpu, gauss.data(), 5, 5, ConvolveMode::same, true);
    imflow::cuda::background(gpu, 3.0, 100);
    imflow::cuda::segment(gpu, 3.0, false);
    imflow::cuda::label(gpu, 8);
    imflow::cuda::measure(gpu);
  });
  REQUIRE(item.detection.width() == 300);
  imflow::ImageBuffer expected;
  expected.resize(300, 200);
  imflow::kernels::convolve2d(item.pixels.view(), {gauss.data(), 5, 5}, ConvolveMode::same, expected.view());
  // Segmentation and labels on the GPU's detection image (the CPU reference uses it too, so a
  // 1e-7 difference in a filtered pixel cannot flip the comparison); measurements on the image.
  const CpuResult cpu = cpu_pipeline(item.pixels.view(), item.detection.view(), 3.0, 100, *item.threshold, 8);
  check_background(*item.background, cpu.background);
  CHECK(item.mask == cpu.mask);
  CHECK(item.labels == cpu.labels);
  check_catalog(*item.catalog, cpu.catalog);
  double largest = 0.0, worst = 0.0;
  for (int64_t i = 0; i < 300 * 200; ++i) {
    if (!std::isfinite(expected.data()[i])) continue;
    largest = std::max(largest, std::abs(static_cast<double>(expected.data()[i])));
    worst = std::max(worst, std::abs(static_cast<double>(expected.data()[i]) - item.detection.data()[i]));
  }
  CHECK(worst <= 1e-5 * largest);
}

TEST_CASE("GPU separable convolution on random images and rank-1 kernels", "[gpu][convolve]") {
  Slot slot;
  WorkItem item;
  uint32_t seed = fresh_seed("GPU separable convolution");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> side(1, 700), ksize(1, 31);
  std::uniform_real_distribution<float> u(-0.3f, 1.0f);  // signed, sums well away from 0
  imflow::ImageBuffer big;
  imflow::kernels::gaussian_kernel(101, 20.0, big);  // shared memory above 48 KB: opt-in
  for (int round = 0; round < 12; ++round) {
    const int64_t w = round == 0 ? 2048 : side(rng), h = round == 0 ? 2048 : side(rng);
    const int kw = ksize(rng), kh = ksize(rng);
    std::vector<float> row(static_cast<size_t>(kw)), col(static_cast<size_t>(kh)), k(static_cast<size_t>(kw) * kh);
    for (auto& v : row) v = u(rng);
    for (auto& v : col) v = u(rng);
    for (int j = 0; j < kh; ++j)
      for (int i = 0; i < kw; ++i) k[static_cast<size_t>(j) * kw + i] = col[static_cast<size_t>(j)] * row[static_cast<size_t>(i)];
    std::vector<float> r2, c2;
    REQUIRE(imflow::kernels::separable_factors({k.data(), kw, kh}, r2, c2));
    INFO("round " << round << " seed " << seed);
    fill_sky(item, w, h, seed + static_cast<uint32_t>(round), round == 0 ? 30 : static_cast<int>(1 + w * h / 5000), 0.0005);
    for (ConvolveMode mode : {ConvolveMode::same, ConvolveMode::full}) {
      check_convolve(slot, item, k.data(), kw, kh, mode);
      if (round == 1 || round == 2) check_convolve(slot, item, big.data(), 101, 101, mode);
    }
  }
}

TEST_CASE("GPU convolution with SEP's arithmetic is the CPU's bit for bit", "[gpu][convolve]") {
  Slot slot;
  WorkItem item;
  imflow::ImageBuffer gauss;
  imflow::kernels::gaussian_kernel(5, 1.3, gauss);
  const auto odd = random_kernel(7, 4, 9);
  const int64_t sizes[][2] = {{217, 181}, {1, 1}, {3, 40}, {61, 2}};
  uint32_t seed = 70;
  for (const auto& s : sizes) {
    fill_sky(item, s[0], s[1], seed++, 5, s[0] > 100 ? 0.01 : 0.0);  // NaN and Inf spread as on the CPU
    using Kernel = std::tuple<const float*, int64_t, int64_t>;
    for (const auto& [k, kw, kh] : {Kernel{gauss.data(), 5, 5}, Kernel{odd.data(), 7, 4}, Kernel{odd.data(), 4, 7}}) {
      const auto sep_kernel = imflow::kernels::sep_filter_kernel({k, kw, kh});
      imflow::ImageBuffer expected;
      expected.resize(s[0], s[1]);
      imflow::kernels::sep_convolve(item.pixels.view(), sep_kernel, expected.data());
      for (bool to_detection : {true, false}) {
        INFO(s[0] << "x" << s[1] << " kernel " << kw << "x" << kh << (to_detection ? " detection" : " image"));
        WorkItem out;
        make_pinned(out, s[0], s[1]);
        std::copy(item.pixels.begin(), item.pixels.end(), out.pixels.begin());
        run_item(slot, out, [&](GpuContext& gpu) { imflow::cuda::convolve_sep(gpu, sep_kernel, to_detection); },
                 {false, false, to_detection, !to_detection});
        const imflow::ImageBuffer& got = to_detection ? out.detection : out.pixels;
        REQUIRE(got.width() == s[0]);
        REQUIRE(got.height() == s[1]);
        int64_t differ = 0;  // the same bits, or NaN on both (the device's NaN has another payload)
        for (int64_t i = 0; i < s[0] * s[1]; ++i) {
          const float g = got.data()[i], e = expected.data()[i];
          if (!(std::isnan(g) && std::isnan(e)) && std::memcmp(&g, &e, sizeof(float)) != 0) ++differ;
        }
        CHECK(differ == 0);
      }
    }
  }
}
