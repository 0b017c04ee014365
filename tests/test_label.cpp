// Connected components: 4 vs 8 connectivity, SciPy's raster numbering, shapes that need merging.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "imflow/kernels/label.hpp"
#include "imflow/tiling.hpp"
#include "imflow/work_item.hpp"
#include "test_helpers.hpp"

namespace {
// Rows of '#' (on) and '.' (off).
struct Mask {
  std::vector<uint8_t> pixels;
  int64_t width = 0, height = 0;
  explicit Mask(const std::vector<std::string>& rows) : width(rows[0].size()), height(rows.size()) {
    for (const auto& row : rows)
      for (char c : row) pixels.push_back(c == '#');
  }
  std::vector<int32_t> label(int connectivity, int32_t& n) const {
    std::vector<int32_t> labels(pixels.size(), -1);
    n = imflow::kernels::label_components({pixels.data(), width, height}, connectivity, labels.data());
    return labels;
  }
};
}  // namespace

TEST_CASE("diagonal neighbours join only with connectivity 8", "[label]") {
  const Mask mask({"#.#",
                   ".#.",
                   "#.#"});
  int32_t n = 0;
  auto labels = mask.label(4, n);
  CHECK(n == 5);
  CHECK(labels == std::vector<int32_t>{1, 0, 2, 0, 3, 0, 4, 0, 5});
  labels = mask.label(8, n);
  CHECK(n == 1);
  CHECK(labels == std::vector<int32_t>{1, 0, 1, 0, 1, 0, 1, 0, 1});
}

TEST_CASE("labels follow raster order of first pixels, U shapes merge", "[label]") {
  const Mask mask({"#.#..#",
                   "#.#..#",
                   "###...",
                   "....##"});
  int32_t n = 0;
  auto labels = mask.label(4, n);
  CHECK(n == 3);
  // The U starting at (0,0) is 1 even though its right arm starts a provisional label first.
  CHECK(labels == std::vector<int32_t>{1, 0, 1, 0, 0, 2,  //
                                       1, 0, 1, 0, 0, 2,  //
                                       1, 1, 1, 0, 0, 0,  //
                                       0, 0, 0, 0, 3, 3});
}

TEST_CASE("a spiral is one component; empty and full masks", "[label]") {
  const Mask spiral({"#######",
                     "......#",
                     "#####.#",
                     "#...#.#",
                     "#.###.#",
                     "#.....#",
                     "#######"});
  int32_t n = 0;
  spiral.label(4, n);
  CHECK(n == 1);
  const Mask empty({"....", "...."});
  auto labels = empty.label(8, n);
  CHECK(n == 0);
  CHECK(labels == std::vector<int32_t>(8, 0));
  const Mask full({"###", "###"});
  labels = full.label(4, n);
  CHECK(n == 1);
  CHECK(labels == std::vector<int32_t>(6, 1));
}

TEST_CASE("connectivity other than 4 or 8 is rejected", "[label]") {
  const Mask mask({"#"});
  int32_t n = 0;
  CHECK_THROWS(mask.label(6, n));
}

namespace {
// Flood fill from each unlabelled pixel in raster order: SciPy's numbering, plainly.
std::vector<int32_t> flood_fill_labels(const std::vector<uint8_t>& mask, int64_t width, int64_t height,
                                       int connectivity, int32_t& n) {
  std::vector<int32_t> labels(mask.size(), 0);
  n = 0;
  std::deque<int64_t> queue;
  for (int64_t start = 0; start < width * height; ++start) {
    if (!mask[start] || labels[start]) continue;
    labels[start] = ++n;
    queue.push_back(start);
    while (!queue.empty()) {
      const int64_t i = queue.front();
      queue.pop_front();
      const int64_t x = i % width, y = i / width;
      for (int64_t dy = -1; dy <= 1; ++dy) {
        for (int64_t dx = -1; dx <= 1; ++dx) {
          if ((dx == 0 && dy == 0) || (connectivity == 4 && dx != 0 && dy != 0)) continue;
          const int64_t nx = x + dx, ny = y + dy;
          if (nx < 0 || ny < 0 || nx >= width || ny >= height) continue;
          const int64_t j = ny * width + nx;
          if (mask[j] && !labels[j]) {
            labels[j] = n;
            queue.push_back(j);
          }
        }
      }
    }
  }
  return labels;
}
}  // namespace

TEST_CASE("random masks label as a flood fill does, any non-zero byte on", "[label]") {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t width = 1 + trial * 7 % 53, height = 1 + trial * 11 % 37;
    const double density = 0.05 + 0.9 * (trial % 10) / 10.0;
    std::bernoulli_distribution on(density);
    std::vector<uint8_t> mask(static_cast<size_t>(width * height));
    for (auto& m : mask) m = on(rng) ? static_cast<uint8_t>(1 + rng() % 255) : 0;
    for (int connectivity : {4, 8}) {
      int32_t expected_n = 0, n = 0;
      const auto expected = flood_fill_labels(mask, width, height, connectivity, expected_n);
      std::vector<int32_t> labels(mask.size(), -1);
      n = imflow::kernels::label_components({mask.data(), width, height}, connectivity, labels.data());
      INFO("trial " << trial << " " << width << "x" << height << " connectivity " << connectivity);
      CHECK(n == expected_n);
      CHECK(labels == expected);
      std::vector<int32_t> zeroed(mask.size(), 0);  // only the labelled pixels written
      CHECK(imflow::kernels::label_components({mask.data(), width, height}, connectivity, zeroed.data(), true) == n);
      CHECK(zeroed == expected);
    }
  }
}

TEST_CASE("minarea drops small components and keeps the order of the rest", "[label]") {
  // Components 1..4 of 1, 3, 2 and 4 pixels.
  std::vector<int32_t> labels = {1, 0, 2, 2, 0, 3, 0, 2, 0, 3, 4, 4, 0, 4, 4, 0};
  const std::vector<int32_t> original = labels;
  CHECK(imflow::kernels::drop_small_components(labels.data(), 16, 4, 1) == 4);
  CHECK(labels == original);
  CHECK(imflow::kernels::drop_small_components(labels.data(), 16, 4, 3) == 2);
  CHECK(labels == std::vector<int32_t>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 2, 2, 0, 2, 2, 0});
  CHECK(imflow::kernels::drop_small_components(labels.data(), 16, 2, 5) == 0);
  CHECK(labels == std::vector<int32_t>(16, 0));
}

TEST_CASE("minarea applied while labelling equals dropping small components afterwards", "[label]") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t width = 1 + trial * 13 % 71, height = 1 + trial * 17 % 43;
    std::bernoulli_distribution on(0.1 + 0.8 * (trial % 8) / 8.0);
    std::vector<uint8_t> mask(static_cast<size_t>(width * height));
    for (auto& m : mask) m = on(rng) ? 1 : 0;
    for (int connectivity : {4, 8}) {
      for (int64_t minarea : {1, 2, 3, 5, 12, 1000}) {
        INFO("trial " << trial << " " << width << "x" << height << " connectivity " << connectivity << " minarea "
                      << minarea);
        std::vector<int32_t> expected(mask.size(), -1);
        int32_t n = imflow::kernels::label_components({mask.data(), width, height}, connectivity, expected.data());
        n = imflow::kernels::drop_small_components(expected.data(), static_cast<int64_t>(expected.size()), n, minarea);
        std::vector<int32_t> labels(mask.size(), -1), zeroed(mask.size(), 0);
        CHECK(imflow::kernels::label_components({mask.data(), width, height}, connectivity, labels.data(), false,
                                                minarea) == n);
        CHECK(labels == expected);
        CHECK(imflow::kernels::label_components({mask.data(), width, height}, connectivity, zeroed.data(), true,
                                                minarea) == n);
        CHECK(zeroed == expected);
      }
    }
  }
}

TEST_CASE("label's minarea through a pipeline: SExtractor's DETECT_MINAREA", "[label][config]") {
  std::mt19937_64 rng(11);
  std::bernoulli_distribution on(0.35);
  imflow::WorkItem item;
  item.pixels.resize(61, 47);
  item.mask.resize(61 * 47);
  for (auto& m : item.mask) m = on(rng) ? 1 : 0;
  std::vector<int32_t> whole(item.mask.size());
  const int32_t n = imflow::kernels::label_components({item.mask.data(), 61, 47}, 8, whole.data());
  std::vector<int64_t> npix(static_cast<size_t>(n) + 1, 0);
  for (int32_t l : whole) ++npix[static_cast<size_t>(l)];
  const auto big = std::count_if(npix.begin() + 1, npix.end(), [](int64_t p) { return p >= 4; });
  REQUIRE(big > 3);
  REQUIRE(big < n);
  auto pipeline = test::pipeline_from("steps: [background, segment, {label: {connectivity: 8, minarea: 4}}]\n");
  pipeline.steps[2]->run_cpu(item);
  CHECK(*item.nlabels == big);
  for (size_t i = 0; i < whole.size(); ++i) CHECK((item.labels[i] != 0) == (npix[static_cast<size_t>(whole[i])] >= 4 && whole[i] != 0));
  CHECK_THROWS_WITH(test::pipeline_from("steps: [background, segment, {label: {minarea: 0}}]\n"), Catch::Contains("minarea"));
  CHECK_THAT(imflow::plan_tiling(test::pipeline_from("steps: [background, segment, {label: {minarea: 5}}, measure]\n")).off_reason,
             Catch::Contains("minarea"));
}
