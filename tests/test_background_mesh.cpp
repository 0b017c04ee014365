// The mesh background (kernels::mesh_background): synthetic planes and gradients, partial and
// dropped meshes, SEP's special cases, and the comparison with SEP itself ([sep], ctest sep_background).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "imflow/kernels/background_mesh.hpp"
#include "imflow/kernels/segment_map.hpp"
#include "test_helpers.hpp"

using imflow::kernels::MeshParams;
using imflow::kernels::mesh_background;

namespace {

std::vector<float> noisy_plane(int64_t w, int64_t h, double level, double gx, double gy, double sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, sigma);
  std::vector<float> image(static_cast<size_t>(w * h));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) image[y * w + x] = static_cast<float>(level + gx * x + gy * y + noise(rng));
  return image;
}

MeshParams mesh(int64_t size, int64_t filter) {
  MeshParams p;
  p.mesh_width = p.mesh_height = size;
  p.filter_width = p.filter_height = filter;
  return p;
}

}  // namespace

TEST_CASE("mesh background recovers a constant plane and its noise", "[background_mesh]") {
  const auto image = noisy_plane(512, 384, 250.0, 0.0, 0.0, 10.0, 1);
  std::vector<float> back, rms;
  const auto stats = mesh_background({image.data(), 512, 384}, mesh(64, 3), back, rms);
  CHECK(stats.meshes == 8 * 6);
  CHECK(stats.meshes_dropped == 0);
  CHECK(stats.valid == 512 * 384);
  CHECK(stats.median == Approx(250.0).margin(0.5));
  CHECK(stats.std == Approx(10.0).epsilon(0.05));
  for (size_t i = 0; i < back.size(); i += 97) {
    REQUIRE(back[i] == Approx(250.0).margin(1.0));
    REQUIRE(rms[i] == Approx(10.0).epsilon(0.1));
  }
}

TEST_CASE("mesh background follows a gradient, partial meshes included", "[background_mesh]") {
  // 700 x 333: the last column of meshes is 60 wide, the last row 13 high (SEP's rule).
  const int64_t w = 700, h = 333;
  const auto image = noisy_plane(w, h, 100.0, 0.1, -0.05, 3.0, 2);
  std::vector<float> back, rms;
  const auto stats = mesh_background({image.data(), w, h}, mesh(64, 3), back, rms);
  CHECK(stats.meshes == 11 * 6);
  // A linear gradient survives the median filter and the spline inside the image (the spline
  // extrapolates the half mesh at the edges: looser there).
  double worst_inside = 0.0;
  for (int64_t y = 32; y < h - 48; ++y)
    for (int64_t x = 32; x < w - 64; ++x) {
      const double truth = 100.0 + 0.1 * x - 0.05 * y;
      worst_inside = std::max(worst_inside, std::fabs(back[y * w + x] - truth));
    }
  CHECK(worst_inside < 1.0);  // noise 3 / sqrt(4096) per mesh, filter and spline: well under 1 adu
  // SEP's rms is the scatter inside a mesh: the noise plus the gradient across 64 pixels
  // (uniform: range^2 / 12), somewhat reduced by the clipping.
  CHECK(rms[h / 2 * w + w / 2] == Approx(std::sqrt(9.0 + (6.4 * 6.4 + 3.2 * 3.2) / 12.0)).epsilon(0.05));
}

TEST_CASE("meshes with fewer than half valid pixels are dropped and filled from the nearest", "[background_mesh]") {
  const int64_t w = 256, h = 256;
  auto image = noisy_plane(w, h, 40.0, 0.0, 0.0, 2.0, 3);
  for (int64_t y = 0; y < 64; ++y)
    for (int64_t x = 0; x < 64; ++x) image[y * w + x] = NAN;  // mesh (0, 0) entirely NaN
  for (int64_t y = 64; y < 128; ++y)
    for (int64_t x = 64; x < 97; ++x) image[y * w + x] = NAN;  // mesh (1, 1): 33 of 64 columns NaN
  std::vector<float> back, rms;
  const auto stats = mesh_background({image.data(), w, h}, mesh(64, 1), back, rms);
  CHECK(stats.meshes_dropped == 2);
  CHECK(stats.valid == w * h - 64 * 64 - 64 * 33);
  CHECK(back[0] == Approx(40.0).margin(0.5));
  CHECK(std::isfinite(back[100 * w + 80]));
  CHECK(rms[0] == Approx(2.0).epsilon(0.1));
}

TEST_CASE("an all-NaN image: every mesh dropped, background level 0 and rms 1 as SEP", "[background_mesh]") {
  std::vector<float> image(100 * 80, NAN), back, rms;
  const auto stats = mesh_background({image.data(), 100, 80}, mesh(32, 3), back, rms);
  CHECK(stats.meshes_dropped == stats.meshes);
  CHECK(stats.median == 0.0);
  CHECK(stats.std == 1.0);
  CHECK(back[123] == 0.0f);
  CHECK(rms[123] == 1.0f);
}

TEST_CASE("the spline column walk places nodes at mesh centres", "[background_mesh]") {
  const auto columns = imflow::kernels::spline_columns(200, 64, 4);
  // Node k sits at pixel (k + 0.5) * 64 - 0.5: pixel 31.5 is d = 0 of node 0; the node changes
  // half a mesh past node 1 (pixel 96), and the last segment (2, 3) extrapolates to the edge.
  CHECK(columns[0].node == 0);
  CHECK(columns[0].d == Approx(-31.5 / 64).margin(1e-6));
  CHECK(columns[95].node == 0);
  CHECK(columns[95].d == Approx(63.5 / 64).margin(1e-5));
  CHECK(columns[96].node == 1);
  CHECK(columns[96].d == Approx(0.5 / 64).margin(1e-6));
  CHECK(columns[160].node == 2);
  CHECK(columns[199].node == 2);
  CHECK(columns[199].d == Approx((199 - 159.5) / 64).margin(1e-5));
}

TEST_CASE("segment against the maps: local background and per-pixel rms", "[background_mesh]") {
  const std::vector<float> image = {10, 12, 20, NAN};
  const std::vector<float> back = {9, 9, 15, 0};
  const std::vector<float> rms = {0.5, 2.0, 1.0, 1.0};
  std::vector<uint8_t> mask(4);
  // rms map, nsigma 2: 10-9 > 1 no (strict), 12-9 > 4 no, 20-15 > 2 yes, NaN never.
  CHECK(imflow::kernels::threshold_mask_local({image.data(), 4, 1}, back.data(), rms.data(), 2.0, 1.0, mask.data()) == 1);
  CHECK(mask == std::vector<uint8_t>{0, 0, 1, 0});
  // global rms 1, nsigma 2: 1 > 2 no, 3 > 2 yes, 5 > 2 yes.
  CHECK(imflow::kernels::threshold_mask_local({image.data(), 4, 1}, back.data(), nullptr, 2.0, 1.0, mask.data()) == 2);
  CHECK(mask == std::vector<uint8_t>{0, 1, 1, 0});
}

// tools/compare_sep_background.py wrote SEP's maps (ctest fixture make_sep_background).
TEST_CASE("the mesh background matches sep.Background", "[sep]") {
  const std::filesystem::path dir = std::filesystem::path(IMFLOW_TEST_OUTPUT_DIR) / "sep_background";
  std::ifstream cases_file(dir / "cases.json");
  REQUIRE(cases_file.good());
  const auto cases = nlohmann::json::parse(cases_file);
  REQUIRE(cases["cases"].size() >= 5);
  for (const auto& c : cases["cases"]) {
    const std::string name = c["name"];
    INFO(name);
    const int64_t w = c["width"], h = c["height"];
    const size_t n = static_cast<size_t>(w * h);
    const auto image = test::read_f32(dir / (name + ".image.f32"), n);
    const auto sep_back = test::read_f32(dir / (name + ".back.f32"), n);
    const auto sep_rms = test::read_f32(dir / (name + ".rms.f32"), n);
    std::vector<float> back, rms;
    const auto stats = mesh_background({image.data(), w, h}, mesh(c["mesh"], c["filter"]), back, rms);
    const double global_back = c["globalback"], global_rms = c["globalrms"];
    CHECK(static_cast<float>(stats.median) == static_cast<float>(global_back));
    CHECK(static_cast<float>(stats.std) == static_cast<float>(global_rms));
    // Relative to SEP's value; where a map crosses zero, relative to the image's rms instead.
    double worst_back = 0.0, worst_rms = 0.0;
    int64_t exact = 0;
    for (size_t i = 0; i < n; ++i) {
      const double floor = 1e-3 * std::fabs(global_rms);
      worst_back = std::max(worst_back, std::fabs(back[i] - sep_back[i]) / std::max<double>(std::fabs(sep_back[i]), floor));
      worst_rms = std::max(worst_rms, std::fabs(rms[i] - sep_rms[i]) / std::max<double>(std::fabs(sep_rms[i]), floor));
      exact += back[i] == sep_back[i] && rms[i] == sep_rms[i];
    }
    std::printf("sep_background %-32s %5lldx%-5lld max rel diff back %.3g rms %.3g, identical pixels %.4f\n",
                name.c_str(), static_cast<long long>(w), static_cast<long long>(h), worst_back, worst_rms,
                static_cast<double>(exact) / static_cast<double>(n));
    CHECK(worst_back <= 1e-3);
    CHECK(worst_rms <= 1e-3);
  }
}
