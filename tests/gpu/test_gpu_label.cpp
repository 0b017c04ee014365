// GPU labelling vs kernels::label_components: identical label arrays (SciPy's numbering) for
// connectivity 4 and 8 on patterns that need merging across tiles and on random masks (fresh
// seeds, edge tiles of one column or row), and with minarea (kernels::drop_small_components).
#include <cuda_runtime_api.h>

#include <string>

#include "gpu_test_helpers.hpp"

using namespace gpu_test;

namespace {

struct MaskImage {
  std::vector<uint8_t> pixels;
  int64_t width = 0, height = 0;
};

MaskImage from_rows(const std::vector<std::string>& rows) {
  MaskImage m;
  m.width = static_cast<int64_t>(rows[0].size());
  m.height = static_cast<int64_t>(rows.size());
  for (const auto& row : rows)
    for (char c : row) m.pixels.push_back(c == '#');
  return m;
}

// The GPU labels of a mask placed straight into the context.
void check_labels(Slot& slot, const MaskImage& m, int connectivity, int64_t minarea = 1) {
  INFO(m.width << "x" << m.height << " connectivity " << connectivity << " minarea " << minarea);
  WorkItem item;
  make_pinned(item, m.width, m.height);
  std::fill(item.pixels.begin(), item.pixels.end(), 0.0f);
  run_item(
      slot, item,
      [&](GpuContext& gpu) {
        gpu.mask.reserve(m.pixels.size() + 4);
        if (!m.pixels.empty())
          IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.mask.data(), m.pixels.data(), m.pixels.size(), cudaMemcpyHostToDevice,
                                            gpu.stream));
        gpu.has_mask = true;
        imflow::cuda::label(gpu, connectivity, minarea);
      },
      {true, false, false, false});
  std::vector<int32_t> expected(m.pixels.size(), 0);
  int32_t n = imflow::kernels::label_components({m.pixels.data(), m.width, m.height}, connectivity, expected.data());
  n = imflow::kernels::drop_small_components(expected.data(), static_cast<int64_t>(expected.size()), n, minarea);
  REQUIRE(item.nlabels.has_value());
  CHECK(*item.nlabels == n);
  CHECK(item.labels == expected);
}

MaskImage spiral(int64_t size) {
  MaskImage m;
  m.width = m.height = size;
  m.pixels.assign(static_cast<size_t>(size * size), 0);
  int64_t x0 = 0, y0 = 0, x1 = size - 1, y1 = size - 1;
  while (x0 <= x1 && y0 <= y1) {  // walls of a square spiral, two pixels apart
    for (int64_t x = x0; x <= x1; ++x) m.pixels[y0 * size + x] = 1;
    for (int64_t y = y0; y <= y1; ++y) m.pixels[y * size + x1] = 1;
    for (int64_t x = x0; x <= x1; ++x) m.pixels[y1 * size + x] = 1;
    for (int64_t y = y0 + 2; y <= y1; ++y) m.pixels[y * size + x0] = 1;
    if (x0 + 1 < size && y0 + 2 < size) m.pixels[(y0 + 2) * size + x0 + 1] = 1;
    x0 += 2;
    y0 += 2;
    x1 -= 2;
    y1 -= 2;
    ++x0;  // keep the walls apart
  }
  return m;
}

MaskImage random_mask(int64_t w, int64_t h, double density, uint32_t seed) {
  MaskImage m;
  m.width = w;
  m.height = h;
  std::mt19937 rng(seed);
  std::bernoulli_distribution on(density);
  for (int64_t i = 0; i < w * h; ++i) m.pixels.push_back(on(rng) ? 1 : 0);
  return m;
}

}  // namespace

TEST_CASE("GPU labels equal the CPU labels on patterns", "[gpu][label]") {
  Slot slot;
  const std::vector<MaskImage> patterns = {
      from_rows({"#.#", ".#.", "#.#"}),                                     // touching diagonals
      from_rows({"#.#..#", "#.#..#", "###.##", "....#."}),                 // U shapes, anti-diagonal
      from_rows({".#.#.#", "#.#.#.", ".#.#.#", "#.#.#."}),                 // checkerboard
      from_rows({"....#", "...#.", "..#..", ".#...", "#...."}),           // anti-diagonal line
      from_rows({"#####", "#...#", "#.#.#", "#...#", "#####"}),           // ring with island
      from_rows({"#"}), from_rows({"."}), from_rows({"#.##.#"}),
      from_rows({"#", ".", "#", "#"}),
  };
  for (const auto& m : patterns)
    for (int c : {4, 8}) check_labels(slot, m, c);
  for (int c : {4, 8}) {
    check_labels(slot, spiral(64), c);
    check_labels(slot, spiral(217), c);
    MaskImage full = random_mask(217, 181, 1.0, 1);
    check_labels(slot, full, c);
    MaskImage empty = random_mask(217, 181, 0.0, 1);
    check_labels(slot, empty, c);
  }
}

TEST_CASE("GPU labels equal the CPU labels on random masks", "[gpu][label]") {
  Slot slot;
  uint32_t seed = fresh_seed("GPU labels on random masks");
  for (double density : {0.05, 0.3, 0.45, 0.6, 0.9})
    for (int c : {4, 8}) {
      INFO("density " << density << " connectivity " << c << " seed " << seed);
      check_labels(slot, random_mask(217, 181, density, seed++), c);
      check_labels(slot, random_mask(1, 500, density, seed++), c);
      check_labels(slot, random_mask(500, 1, density, seed++), c);
      check_labels(slot, random_mask(1031, 1029, density, seed++), c);
      // A last tile column one pixel wide, a last tile row one pixel high (tiles of 32 x 64).
      check_labels(slot, random_mask(33, 650, density, seed++), c);
      check_labels(slot, random_mask(650, 65, density, seed++), c);
    }
}

TEST_CASE("GPU labels with minarea equal the CPU labels", "[gpu][label]") {
  Slot slot;
  uint32_t seed = fresh_seed("GPU labels with minarea");
  for (int64_t minarea : {2, 5, 40})
    for (double density : {0.3, 0.55})
      for (int c : {4, 8}) {
        INFO("density " << density << " seed " << seed);
        check_labels(slot, random_mask(217, 181, density, seed++), c, minarea);
        check_labels(slot, random_mask(1031, 1029, density, seed++), c, minarea);
      }
  check_labels(slot, spiral(217), 8, 100000);  // the one component is too small: nothing left
  check_labels(slot, random_mask(64, 64, 1.0, 1), 4, 4096);  // exactly minarea pixels: kept
}
