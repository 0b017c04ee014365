// The GPU deblending's SEP arithmetic (cuda/deblend_sep.hpp and cuda/deblend_walk.hpp), run on
// one host lane, against the CPU kernel's (src/kernels/deblend_analyse.cpp): SEP's analyse, with
// and without a merged object's centre, and CLEAN's threshold heap, bit for bit on random objects.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "cuda/deblend_sep.hpp"
#include "kernels/deblend_internal.hpp"

namespace {

namespace cpu = imflow::kernels::deblend_detail;
namespace gpu = imflow::cuda::deblend_detail;

template <typename T>
auto bit_pattern(T value) {
  std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t> bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// An object of `n` pixels scattered in a box of an image, in a random chain order; values with
// ties (repeated peaks, +0 and -0 among them) as quantised data has. Non-positive: no value above
// 0, so that which zero is the peak shows.
struct ArithObject {
  int32_t image_width = 0;
  std::vector<float> cd, value, thresh;  // image-sized
  cpu::SegmentPixels segment;            // the same pixels as the CPU kernel holds them
  std::vector<int32_t> chain;            // indices into the segment, in chain order
  std::vector<int32_t> image_index;      // the image index of segment pixel k
};

ArithObject random_object(std::mt19937& rng, int64_t n, bool non_positive) {
  ArithObject a;
  std::uniform_int_distribution<int32_t> side(1, 200);
  const int32_t box_w = side(rng), box_h = std::max<int32_t>(1, static_cast<int32_t>((n + box_w - 1) / box_w) + side(rng) % 7);
  const int32_t x0 = side(rng), y0 = side(rng);
  a.image_width = x0 + box_w + 3;
  const int64_t image_pixels = static_cast<int64_t>(a.image_width) * (y0 + box_h + 2);
  a.cd.assign(static_cast<size_t>(image_pixels), 0.0f);
  a.value = a.cd;
  a.thresh = a.cd;
  std::vector<int32_t> cells(static_cast<size_t>(box_w) * box_h);
  std::iota(cells.begin(), cells.end(), 0);
  std::shuffle(cells.begin(), cells.end(), rng);
  cells.resize(static_cast<size_t>(std::min<int64_t>(n, static_cast<int64_t>(cells.size()))));
  std::sort(cells.begin(), cells.end());  // the segment in raster order
  std::uniform_real_distribution<float> level(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 9);
  a.segment.x0 = x0;
  a.segment.y0 = y0;
  a.segment.width = box_w;
  a.segment.height = box_h;
  for (const int32_t c : cells) {
    const int32_t x = c % box_w, y = c / box_w;
    const int32_t p = (y0 + y) * a.image_width + x0 + x;
    const int k = kind(rng);
    // Quantised values (steps of 0.04, so equal peaks recur), a few exact zeros of either sign.
    float v = k == 0 ? 0.0f : k == 1 ? -0.0f : std::round(level(rng) * 2000.0f) * 0.04f + 1.0f;
    if (non_positive && k > 1) v = -v;
    a.cd[p] = v;
    a.value[p] = k == 2 ? v * 0.5f : v;
    a.thresh[p] = 1.0f + 0.01f * static_cast<float>(kind(rng));
    a.segment.x.push_back(x);
    a.segment.y.push_back(y);
    a.segment.cd.push_back(a.cd[p]);
    a.segment.value.push_back(a.value[p]);
    a.segment.thresh.push_back(a.thresh[p]);
    a.image_index.push_back(p);
  }
  a.chain.resize(cells.size());
  std::iota(a.chain.begin(), a.chain.end(), 0);
  std::shuffle(a.chain.begin(), a.chain.end(), rng);
  return a;
}

}  // namespace

TEST_CASE("GPU deblending's SEP arithmetic on one host lane equals the CPU kernel's", "[deblend]") {
  std::mt19937 rng(20261127);
  std::uniform_int_distribution<int64_t> sizes(1, 3000);
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t want = trial < 10 ? trial + 1 : sizes(rng);
    const ArithObject a = random_object(rng, want, trial % 4 == 3);
    const auto n = static_cast<int64_t>(a.chain.size());
    gpu::Pixels im;
    im.cd = a.cd.data();
    im.value = a.value.data();
    im.thresh = a.thresh.data();
    im.width = a.image_width;
    const auto px = [&a](int64_t i) { return a.image_index[static_cast<size_t>(a.chain[static_cast<size_t>(i)])]; };
    for (const bool merged : {false, true}) {
      INFO("trial " << trial << ", " << n << " pixels, merged " << merged);
      cpu::SepObject c;
      gpu::SepObject g;
      c.thresh = g.thresh = 1.5f;
      c.merged = g.merged = merged;
      c.mx = g.mx = a.segment.x0 + 0.37 * static_cast<double>(a.segment.width);
      c.my = g.my = a.segment.y0 + 0.61 * static_cast<double>(a.segment.height);
      cpu::sep_analyse(a.segment, a.chain.data(), n, true, c);
      gpu::sep_analyse(gpu::Team{}, im, px, n, true, g);
      CHECK(g.fdnpix == c.fdnpix);
      CHECK(bit_pattern(g.fdflux) == bit_pattern(c.fdflux));
      CHECK(bit_pattern(g.fdpeak) == bit_pattern(c.fdpeak));
      CHECK(g.ymin == c.ymin + a.segment.y0);
      CHECK(g.ymax == c.ymax + a.segment.y0);
      CHECK(bit_pattern(g.mx) == bit_pattern(c.mx));
      CHECK(bit_pattern(g.my) == bit_pattern(c.my));
      CHECK(bit_pattern(g.a) == bit_pattern(c.a));
      CHECK(bit_pattern(g.b) == bit_pattern(c.b));
      CHECK(bit_pattern(g.cxx) == bit_pattern(c.cxx));
      CHECK(bit_pattern(g.cyy) == bit_pattern(c.cyy));
      CHECK(bit_pattern(g.cxy) == bit_pattern(c.cxy));
      CHECK(bit_pattern(g.abcor) == bit_pattern(c.abcor));
      CHECK(g.singular == c.singular);
    }
    for (const int minarea : {1, 5, 12}) {
      std::vector<float> heap(static_cast<size_t>(minarea));
      const float expected = cpu::sep_mthresh(a.segment, a.chain.data(), n, minarea);
      const float got = gpu::sep_mthresh(gpu::Team{}, im, px, n, minarea, heap.data());
      CHECK(bit_pattern(got) == bit_pattern(expected));
    }
  }
}
