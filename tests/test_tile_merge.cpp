// Tile label merging: label each tile on its own, join across borders, merge sums; the result
// must be the whole image's labelling and catalog (same ids, npix, bbox, peak; sums to rounding).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "imflow/kernels/label.hpp"
#include "imflow/kernels/measure.hpp"
#include "imflow/kernels/tile_merge.hpp"
#include "imflow/tiling.hpp"

using namespace imflow;

namespace {
struct Labelled {
  std::vector<int32_t> labels;
  Catalog catalog;
};

Labelled whole_image(const std::vector<uint8_t>& mask, const std::vector<float>& pixels, int64_t w, int64_t h, int conn) {
  Labelled out;
  out.labels.resize(mask.size());
  const int32_t n = kernels::label_components({mask.data(), w, h}, conn, out.labels.data());
  out.catalog = kernels::measure_sources({pixels.data(), w, h}, out.labels.data(), n);
  return out;
}

// What the engine does per tile, without the engine: label the core, accumulate, describe, merge.
Labelled tiled(const std::vector<uint8_t>& mask, const std::vector<float>& pixels, int64_t w, int64_t h, int64_t size,
               int conn) {
  TileGrid grid{w, h, size, 0};
  std::vector<kernels::TileLabels> tiles(static_cast<size_t>(grid.count()));
  std::vector<std::vector<int32_t>> tile_labels(tiles.size());
  for (int64_t t = 0; t < grid.count(); ++t) {
    const TileRect core = grid.core(t);
    std::vector<uint8_t> m(static_cast<size_t>(core.size()));
    std::vector<float> p(m.size());
    for (int64_t y = 0; y < core.height; ++y)
      for (int64_t x = 0; x < core.width; ++x) {
        m[y * core.width + x] = mask[(core.y + y) * w + core.x + x];
        p[y * core.width + x] = pixels[(core.y + y) * w + core.x + x];
      }
    auto& labels = tile_labels[t];
    labels.resize(m.size());
    const int32_t n = kernels::label_components({m.data(), core.width, core.height}, conn, labels.data());
    kernels::describe_tile_labels(labels.data(), core, core, n, w, tiles[t]);
    tiles[t].sums = kernels::accumulate_sources({p.data(), core.width, core.height}, labels.data(), n, core.x, core.y);
  }
  const auto merged = kernels::merge_tile_labels(tiles, grid.columns(), grid.rows(), conn);
  Labelled out;
  out.catalog = kernels::finish_sources(merged.sums, w, h);
  out.labels.assign(mask.size(), 0);
  for (int64_t t = 0; t < grid.count(); ++t) {
    const TileRect core = grid.core(t);
    for (int64_t y = 0; y < core.height; ++y)
      for (int64_t x = 0; x < core.width; ++x) {
        const int32_t local = tile_labels[t][y * core.width + x];
        out.labels[(core.y + y) * w + core.x + x] = local ? merged.final_id[t][local - 1] : 0;
      }
  }
  return out;
}

bool close(double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b)) + 1e-300; }

void check_same(const Labelled& whole, const Labelled& tiles) {
  REQUIRE(tiles.catalog.size() == whole.catalog.size());
  CHECK(tiles.labels == whole.labels);
  for (size_t i = 0; i < whole.catalog.size(); ++i) {
    const Source& a = whole.catalog[i];
    const Source& b = tiles.catalog[i];
    INFO("source " << a.id);
    CHECK(b.id == a.id);
    CHECK(b.npix == a.npix);
    CHECK(b.xmin == a.xmin);
    CHECK(b.xmax == a.xmax);
    CHECK(b.ymin == a.ymin);
    CHECK(b.ymax == a.ymax);
    CHECK(b.peak == a.peak);
    CHECK(b.peak_x == a.peak_x);
    CHECK(b.peak_y == a.peak_y);
    CHECK(close(b.flux, a.flux));
    CHECK(close(b.x, a.x));
    CHECK(close(b.y, a.y));
  }
}

// Integer pixel values (many ties: the peak's first-in-raster-order rule matters).
std::vector<float> tie_pixels(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(1, 9);
  std::vector<float> p(n);
  for (auto& v : p) v = static_cast<float>(value(rng));
  return p;
}

void set(std::vector<uint8_t>& mask, int64_t w, int64_t x, int64_t y) { mask[y * w + x] = 1; }
}  // namespace

TEST_CASE("random masks: tiled labels and catalog equal the whole image's", "[tiling][merge]") {
  const int64_t w = 53, h = 41;
  for (double density : {0.3, 0.45, 0.6}) {
    std::mt19937 rng(static_cast<unsigned>(density * 100));
    std::bernoulli_distribution on(density);
    std::vector<uint8_t> mask(static_cast<size_t>(w * h));
    for (auto& m : mask) m = on(rng) ? 1 : 0;
    const auto pixels = tie_pixels(mask.size(), 7);
    for (int conn : {4, 8}) {
      const Labelled whole = whole_image(mask, pixels, w, h, conn);
      for (int64_t size : {1, 2, 3, 5, 7, 8, 16, 17, 40, 53, 64}) {
        INFO("density " << density << " connectivity " << conn << " tile " << size);
        check_same(whole, tiled(mask, pixels, w, h, size, conn));
      }
    }
  }
}

TEST_CASE("sources on tile corners, edges, across three tiles, snakes", "[tiling][merge]") {
  const int64_t w = 96, h = 80, s = 32;  // 3 x 3 tiles of 32
  std::vector<uint8_t> mask(static_cast<size_t>(w * h), 0);
  // A 2x2 block centred on the corner shared by four tiles.
  for (int64_t y = s - 1; y <= s; ++y)
    for (int64_t x = s - 1; x <= s; ++x) set(mask, w, x, y);
  // Two pixels touching only diagonally across the corner at (64, 32): one source for 8, two for 4.
  set(mask, w, 2 * s - 1, s - 1);
  set(mask, w, 2 * s, s);
  // The anti-diagonal across the corner at (32, 64).
  set(mask, w, s, 2 * s - 1);
  set(mask, w, s - 1, 2 * s);
  // A line along a vertical tile edge (column 63) and one spanning three tiles (row 10).
  for (int64_t y = 40; y < 60; ++y) set(mask, w, 2 * s - 1, y);
  for (int64_t x = 3; x < 93; ++x) set(mask, w, x, 10);
  // A snake crossing the border at column 64 back and forth, joined only in the right tile.
  for (int64_t y = 68; y < 78; ++y) {
    const int64_t x0 = 2 * s - 4 + ((y / 2) % 2) * 6;
    set(mask, w, x0, y);
    set(mask, w, x0 + 1, y);
  }
  for (int64_t y = 66; y < 80; y += 3)
    for (int64_t x = 55; x < 75; ++x) set(mask, w, x, y);
  // A U shape whose arms are joined only at the bottom, in the tile below them.
  for (int64_t y = 20; y < 36; ++y) {
    set(mask, w, 80, y);
    set(mask, w, 90, y);
  }
  for (int64_t x = 80; x <= 90; ++x) set(mask, w, x, 35);
  // A diagonal staircase, 8-connected only, through several tiles.
  for (int64_t i = 0; i < 70; ++i) set(mask, w, 5 + i, 5 + i);
  const auto pixels = tie_pixels(mask.size(), 3);
  for (int conn : {4, 8}) {
    const Labelled whole = whole_image(mask, pixels, w, h, conn);
    for (int64_t size : {s, int64_t{31}, int64_t{33}, int64_t{7}, int64_t{64}, int64_t{4096}}) {
      INFO("connectivity " << conn << " tile " << size);
      check_same(whole, tiled(mask, pixels, w, h, size, conn));
    }
  }
}

TEST_CASE("labels touching only at a corner stay apart with 4-connectivity", "[tiling][merge]") {
  const int64_t w = 4, h = 4;
  std::vector<uint8_t> mask(16, 0);
  set(mask, w, 1, 1);
  set(mask, w, 2, 2);
  const auto pixels = tie_pixels(16, 1);
  CHECK(tiled(mask, pixels, w, h, 2, 4).catalog.size() == 2);
  CHECK(tiled(mask, pixels, w, h, 2, 8).catalog.size() == 1);
}
