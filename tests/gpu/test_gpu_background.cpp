// GPU kappa-sigma clipping vs kernels::kappa_sigma_clip: exact median, std to 1e-6, same
// iterations/kept/valid, on random skies (fresh seeds), ties, edge shapes and degenerate cases.
#include "gpu_test_helpers.hpp"

using namespace gpu_test;

namespace {

imflow::BackgroundStats gpu_background(Slot& slot, WorkItem& item, double kappa, int max_iters) {
  run_item(slot, item, [&](GpuContext& gpu) { imflow::cuda::background(gpu, kappa, max_iters); }, {});
  REQUIRE(item.background.has_value());
  return *item.background;
}

imflow::BackgroundStats cpu_background(const WorkItem& item, double kappa, int max_iters) {
  std::vector<float> work;
  return imflow::kernels::kappa_sigma_clip(item.pixels.view(), kappa, max_iters, work);
}

void check(Slot& slot, WorkItem& item, double kappa, int max_iters) {
  INFO(item.pixels.width() << "x" << item.pixels.height() << " kappa " << kappa << " max_iters " << max_iters);
  check_background(gpu_background(slot, item, kappa, max_iters), cpu_background(item, kappa, max_iters));
}

}  // namespace

TEST_CASE("GPU background matches the CPU on random skies", "[gpu][background]") {
  Slot slot;
  WorkItem item;
  const int64_t sizes[][2] = {{256, 256}, {217, 181}, {1000, 3}, {3, 1000}, {64, 63}, {1, 1}, {1, 2}, {2, 1},
                              {1, 777}, {777, 1}, {1024, 1024}};
  uint32_t seed = fresh_seed("GPU background on random skies");
  for (const auto& s : sizes) {
    INFO(s[0] << "x" << s[1] << " seed " << seed);
    fill_sky(item, s[0], s[1], seed++);
    for (double kappa : {3.0, 2.0, 1.5}) check(slot, item, kappa, 100);
    check(slot, item, 3.0, 1);
    check(slot, item, 3.0, 2);
    check(slot, item, 0.1, 100);  // passes that would clip everything
  }
}

TEST_CASE("GPU background matches the CPU on large skies (chunks of several thousand keys)", "[gpu][background]") {
  // The clip block's chunks of sorted keys: 2,048 keys for 2048x2048, 6,144 for 4099x2600 (the
  // random skies above stay at 1,024).
  Slot slot;
  WorkItem item;
  uint32_t seed = fresh_seed("GPU background on large skies");
  for (const auto& s : {std::pair<int64_t, int64_t>{2048, 2048}, {4099, 2600}}) {
    INFO(s.first << "x" << s.second << " seed " << seed);
    fill_sky(item, s.first, s.second, seed++);
    check(slot, item, 3.0, 100);
    check(slot, item, 1.5, 100);
  }
}

TEST_CASE("GPU background of large skies with many non-finite pixels and huge outliers", "[gpu][background]") {
  // The finite keys end inside a chunk of sorted keys; then chunks hold values 60 orders of
  // magnitude apart until the clip leaves the outliers out.
  Slot slot;
  WorkItem item;
  uint32_t seed = fresh_seed("GPU background, non-finite pixels and outliers");
  INFO("seed " << seed);
  const auto check_closely = [&](double kappa, int max_iters) {  // and the std far closer than 1e-6
    const imflow::BackgroundStats gpu = gpu_background(slot, item, kappa, max_iters);
    const imflow::BackgroundStats cpu = cpu_background(item, kappa, max_iters);
    check_background(gpu, cpu);
    CHECK(gpu.std == Approx(cpu.std).epsilon(1e-10));
  };
  fill_sky(item, 2048, 2048, seed, 40, 0.3);
  check_closely(3.0, 100);
  check_closely(1.5, 100);
  float* p = item.pixels.data();
  for (int64_t i = 0; i < item.pixels.size(); i += 97) p[i] = (i / 97) % 2 ? 3e30f : -3e30f;
  check_closely(3.0, 100);
  check_closely(3.0, 2);
  // The first pass sums squares of 9e60 with squares of ~1e3: the CPU's running sum rounds them
  // at ~1e-11, the GPU's chunk sums less.
  check(slot, item, 3.0, 1);
}

TEST_CASE("GPU background handles ties, negatives, wide ranges and signed zeros", "[gpu][background]") {
  Slot slot;
  WorkItem item;
  std::mt19937 rng(7);
  SECTION("integer values: many ties, even counts") {
    for (int64_t w : {100, 101, 64}) {
      make_pinned(item, w, 50);
      std::poisson_distribution<int> poisson(20);
      for (auto& v : item.pixels) v = static_cast<float>(poisson(rng));
      check(slot, item, 3.0, 100);
      check(slot, item, 1.0, 100);
    }
  }
  SECTION("two values") {
    make_pinned(item, 10, 10);
    for (int64_t i = 0; i < 100; ++i) item.pixels.data()[i] = i < 50 ? -1.0f : 1.0e6f;
    check(slot, item, 3.0, 100);
    check(slot, item, 0.5, 100);
  }
  SECTION("negatives, zeros of both signs, huge and tiny magnitudes") {
    make_pinned(item, 97, 89);
    std::uniform_int_distribution<int> pick(0, 6);
    std::normal_distribution<float> g(-3.0f, 2.0f);
    for (auto& v : item.pixels) {
      switch (pick(rng)) {
        case 0: v = 0.0f; break;
        case 1: v = -0.0f; break;
        case 2: v = 1e-30f; break;
        case 3: v = -3e30f; break;
        default: v = g(rng);
      }
    }
    check(slot, item, 3.0, 100);
    check(slot, item, 1.0, 100);
  }
  SECTION("a clip bound at zero: both signed zeros are outside it") {
    // median -1, std 0.5 exactly: kappa 2 puts the upper bound at 0 (then the mirror image, the
    // lower bound at 0); the kept set is the six -1s (1s), as -0 < 0 and 0 > -0 are false.
    make_pinned(item, 8, 1);
    const float values[] = {-2.0f, -1.0f, -1.0f, -0.0f, -1.0f, -1.0f, -1.0f, -1.0f};
    for (const float sign : {1.0f, -1.0f}) {
      for (int i = 0; i < 8; ++i) item.pixels.data()[i] = sign * values[i];
      const auto s = gpu_background(slot, item, 2.0, 100);
      CHECK(s.kept == 6);
      CHECK(s.iterations == 2);
      CHECK(s.median == -sign);
      check(slot, item, 2.0, 100);
    }
  }
  SECTION("exact even count, the upper middle value unique") {
    make_pinned(item, 4, 1);
    const float values[] = {1.0f, 2.0f, 4.0f, 8.0f};
    std::copy(values, values + 4, item.pixels.data());
    check(slot, item, 3.0, 100);
  }
}

TEST_CASE("GPU background degenerate images", "[gpu][background]") {
  Slot slot;
  WorkItem item;
  SECTION("constant image: std 0 stops after one pass") {
    make_pinned(item, 217, 181);
    std::fill(item.pixels.begin(), item.pixels.end(), 42.5f);
    const auto s = gpu_background(slot, item, 3.0, 100);
    CHECK(s.median == 42.5);
    CHECK(s.std == 0.0);
    CHECK(s.iterations == 1);
    check(slot, item, 3.0, 100);
  }
  SECTION("all NaN: NaN stats, no iteration") {
    make_pinned(item, 33, 17);
    std::fill(item.pixels.begin(), item.pixels.end(), NAN);
    const auto s = gpu_background(slot, item, 3.0, 100);
    CHECK(std::isnan(s.median));
    CHECK(std::isnan(s.std));
    CHECK(s.iterations == 0);
    CHECK(s.valid == 0);
    check(slot, item, 3.0, 100);
  }
  SECTION("one finite pixel among NaN and Inf") {
    make_pinned(item, 5, 5);
    std::fill(item.pixels.begin(), item.pixels.end(), INFINITY);
    item.pixels.data()[7] = NAN;
    item.pixels.data()[12] = -7.25f;
    check(slot, item, 3.0, 100);
  }
}
