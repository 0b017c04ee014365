// The CPU mesh kernels' fast paths return their plain twins' bits: the prefix-sum histogram mode
// vs SEP's loop, meshes estimated a band at a time vs one at a time, the SSE2 threshold vs a
// scalar one, and the threshold on RMS rows from the grid vs the whole RMS map.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <cstring>
#include <random>
#include <vector>

#include "imflow/kernels/background_mesh.hpp"
#include "imflow/kernels/mesh_mode.hpp"
#include "imflow/kernels/segment_map.hpp"

namespace {
using imflow::kernels::histogram_mode;
using imflow::kernels::histogram_mode_reference;

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void check_same(const std::vector<int32_t>& histogram, float mean_f, float qzero, float qscale) {
  std::vector<int32_t> prefix;
  const auto n = static_cast<int64_t>(histogram.size());
  const auto fast = histogram_mode(histogram.data(), n, mean_f, qzero, qscale, prefix);
  const auto reference = histogram_mode_reference(histogram.data(), n, mean_f, qzero, qscale);
  INFO("nlevels " << n << " reference back " << reference.back << " sigma " << reference.sigma << ", fast "
                  << fast.back << " " << fast.sigma);
  CHECK(same_bits(fast.back, reference.back));
  CHECK(same_bits(fast.sigma, reference.sigma));
}

// The histogram SEP builds for a mesh of `pixels` Gaussian values (nlevels ~ pixels bins over
// +- 5 sigma), optionally with a tail of bright pixels.
std::vector<int32_t> mesh_histogram(std::mt19937_64& rng, int64_t pixels, double bright_fraction) {
  const int64_t nlevels = std::min<int64_t>(4096, static_cast<int64_t>(0.997356 * static_cast<double>(pixels) + 1));
  std::vector<int32_t> histogram(static_cast<size_t>(nlevels), 0);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int64_t i = 0; i < pixels; ++i) {
    const double sigmas = uniform(rng) < bright_fraction ? 2.0 + 6.0 * uniform(rng) : noise(rng);
    const double bin = (sigmas + 5.0) / 10.0 * static_cast<double>(nlevels);
    if (bin >= 0.0 && bin < static_cast<double>(nlevels)) ++histogram[static_cast<size_t>(bin)];
  }
  return histogram;
}
}  // namespace

TEST_CASE("the prefix-sum histogram mode equals SEP's loop on mesh histograms", "[background_mesh]") {
  std::mt19937_64 rng(11);
  for (int64_t pixels : {16, 100, 1024, 4096, 4096, 9000, 65536}) {
    for (double bright : {0.0, 0.02, 0.2, 0.6}) {
      check_same(mesh_histogram(rng, pixels, bright), 1000.5f, 900.25f, 0.37f);
    }
  }
}

TEST_CASE("the prefix-sum histogram mode equals SEP's loop on sparse and degenerate histograms",
          "[background_mesh]") {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> count(0, 3);
  std::uniform_int_distribution<int> zero(0, 2);
  for (int trial = 0; trial < 300; ++trial) {  // few pixels per bin, many ties and empty bins
    const int64_t n = 1 + trial * 13 % 700;
    std::vector<int32_t> histogram(static_cast<size_t>(n));
    for (auto& h : histogram) h = zero(rng) == 0 ? 0 : count(rng);
    check_same(histogram, 3.0f, -1.5f, 0.01f);
  }
  check_same({0}, 2.0f, 1.0f, 1.0f);                        // empty
  check_same({7}, 2.0f, 1.0f, 1.0f);                        // one bin
  check_same({0, 0, 0, 9, 0, 0}, 2.0f, 1.0f, 1.0f);         // one spike
  check_same({5, 0, 0, 0, 0, 0, 0, 0, 0, 5}, 2.0f, 1.0f, 0.5f);  // two spikes at the ends
  check_same({0, 0, 0, 0, 0, 12}, 2.0f, 1.0f, 1.0f);        // all in the last bin
  check_same({12, 0, 0, 0, 0, 0}, 2.0f, 1.0f, 1.0f);        // all in the first bin
  check_same(std::vector<int32_t>(4096, 1), 2.0f, 1.0f, 1.0f);  // flat
}

TEST_CASE("histograms of 2^29 pixels or more take SEP's loop", "[background_mesh]") {
  check_same({int32_t{1} << 28, int32_t{1} << 28, 3}, 1.0f, 0.0f, 1.0f);
}

namespace {
// A field of noise and bright spots with the values SEP's statistics treat specially: NaN, +-Inf,
// -1e30 (SEP's -BIG), huge values; magnitudes far apart (so that a sum in another order would
// round differently); and a region of NaN that drops the meshes under it.
std::vector<float> awkward_field(int64_t w, int64_t h, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(100.0f, 7.0f);
  std::uniform_int_distribution<int> pick(0, 999);
  std::vector<float> image(static_cast<size_t>(w * h));
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      float v = noise(rng);
      const int p = pick(rng);
      if (p < 3) v = std::nanf("");
      else if (p < 4) v = inf;
      else if (p < 5) v = -inf;
      else if (p < 6) v = -1e30f;
      else if (p < 7) v = 3e38f;
      else if (p < 12) v = 1e12f * noise(rng);  // with the next: float64 sums that depend on the order
      else if (p < 30) v = 1e-8f * noise(rng);
      else if (p < 60) v += 500.0f;
      if (x < w / 5 && y < 3 * h / 4) v = std::nanf("");  // dropped meshes
      image[static_cast<size_t>(y * w + x)] = v;
    }
  }
  return image;
}

bool same_estimate(const imflow::kernels::MeshEstimate& a, const imflow::kernels::MeshEstimate& b) {
  return same_bits(a.back, b.back) && same_bits(a.sigma, b.sigma) && a.valid == b.valid;
}
}  // namespace

TEST_CASE("meshes estimated a band at a time equal meshes estimated one at a time", "[background_mesh]") {
  for (int64_t mesh : {64, 32, 12, 10, 7}) {  // multiples of 4 take the SSE2 band path, the others not
    const int64_t count = 13, w = mesh * count, h = mesh + 3;
    auto image = awkward_field(w, h, static_cast<uint32_t>(mesh));
    for (int64_t y = 0; y < h; ++y)  // a flat mesh: its clip cuts equal its pixels (the cuts are inclusive)
      for (int64_t x = 0; x < mesh; ++x) image[static_cast<size_t>(y * w + (count - 2) * mesh + x)] = 42.0f;
    imflow::kernels::MeshScratch scratch;
    std::vector<imflow::kernels::MeshEstimate> band(static_cast<size_t>(count));
    imflow::kernels::estimate_meshes(image.data(), w, mesh, h, count, band.data(), scratch);
    int dropped = 0;
    for (int64_t k = 0; k < count; ++k) {
      const auto one = imflow::kernels::estimate_mesh(image.data() + k * mesh, w, mesh, h, scratch);
      INFO("mesh size " << mesh << ", mesh " << k << ": " << one.back << " " << one.sigma << " vs " << band[k].back
                        << " " << band[k].sigma);
      CHECK(same_estimate(one, band[static_cast<size_t>(k)]));
      dropped += one.back <= imflow::kernels::kDroppedMesh;
    }
    CHECK(dropped > 0);
    CHECK(dropped < count);
  }
}

namespace {
// threshold_mask_local's rule, one pixel at a time.
uint8_t above(float p, float b, const float* rms, size_t i, double nsigma, double global_rms) {
  const double limit = rms != nullptr ? nsigma * static_cast<double>(rms[i]) : nsigma * global_rms;
  return std::isfinite(p) && static_cast<double>(p) - static_cast<double>(b) > limit ? 1 : 0;
}
}  // namespace

TEST_CASE("the SSE2 threshold equals the scalar rule, NaN, Inf and negative RMS included", "[background_mesh]") {
  std::mt19937 rng(9);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 99);
  for (int64_t w : {1, 3, 4, 5, 8, 13, 64, 67}) {
    const int64_t h = 5;
    const size_t n = static_cast<size_t>(w * h);
    std::vector<float> image(n), back(n), rms(n);
    for (size_t i = 0; i < n; ++i) {
      image[i] = 10.0f + 5.0f * noise(rng);
      back[i] = 10.0f + noise(rng);
      rms[i] = 1.0f + 0.5f * noise(rng);  // sometimes negative, as SEP's bicubic rms can be
      const int p = pick(rng);
      if (p < 5) image[i] = std::nanf("");
      else if (p < 8) image[i] = std::numeric_limits<float>::infinity();
      else if (p < 10) back[i] = std::nanf("");
      else if (p < 12) rms[i] = std::nanf("");
      else if (p < 14) image[i] = back[i] + 2.0f * rms[i];  // at the threshold for nsigma 2
    }
    for (const float* r : {static_cast<const float*>(rms.data()), static_cast<const float*>(nullptr)}) {
      std::vector<uint8_t> mask(n, 7), expected(n);
      int64_t expected_count = 0;
      for (size_t i = 0; i < n; ++i) expected_count += expected[i] = above(image[i], back[i], r, i, 2.0, 1.5);
      const int64_t count = imflow::kernels::threshold_mask_local({image.data(), w, h}, back.data(), r, 2.0, 1.5,
                                                                  mask.data());
      INFO("width " << w << (r ? " rms map" : " global rms"));
      CHECK(mask == expected);
      CHECK(count == expected_count);
    }
  }
}

TEST_CASE("the threshold on RMS rows from the grid equals the one on the whole RMS map", "[background_mesh]") {
  for (int64_t w : {333, 256}) {
    const int64_t h = 201;
    auto image = awkward_field(w, h, 4);
    imflow::kernels::MeshParams params;
    params.mesh_width = params.mesh_height = 32;
    std::vector<float> back, rms, back_only;
    const auto stats = imflow::kernels::mesh_background({image.data(), w, h}, params, back, rms);
    imflow::kernels::MeshGrid grid;
    const auto grid_stats = imflow::kernels::mesh_background({image.data(), w, h}, params, back_only, grid);
    CHECK(back_only == back);
    CHECK(grid_stats.median == stats.median);
    CHECK(grid_stats.std == stats.std);
    CHECK(grid_stats.meshes_dropped == stats.meshes_dropped);
    std::vector<uint8_t> from_map(image.size()), from_grid(image.size());
    const int64_t n_map = imflow::kernels::threshold_mask_local({image.data(), w, h}, back.data(), rms.data(), 1.5,
                                                                stats.std, from_map.data());
    const int64_t n_grid = imflow::kernels::threshold_mask_mesh_rms({image.data(), w, h}, back.data(), grid, 1.5,
                                                                    from_grid.data());
    CHECK(n_map > 0);
    CHECK(n_grid == n_map);
    CHECK(from_grid == from_map);
  }
}
