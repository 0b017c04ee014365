// Connected components: 4 vs 8 connectivity, SciPy's raster numbering, shapes that need merging.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "imflow/kernels/label.hpp"

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
