// SEP's measurements of an object during deblending and CLEAN (analyse.c: preanalyse, analyse
// without the error terms, analysemthresh), with SEP's types: float32 products and stored
// fields where SEP has them, float64 sums. And glibc's rand(), the stream SEP draws from without
// a seed.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "deblend_internal.hpp"
#include "imflow/kernels/sep_deblend_arith.hpp"

namespace imflow::kernels {

namespace deblend_detail {

namespace {
constexpr float kBig = 1e+30f;
constexpr int64_t kMaxPicSize = 1048576;
}  // namespace

void sep_preanalyse(const SegmentPixels& s, const int32_t* idx, int64_t n, SepObject& o) {
  int64_t fdnpix = 0;
  double rv = 0.0;
  float peak = -kBig, cpeak = -kBig;
  int64_t xmin = 2 * kMaxPicSize, ymin = 2 * kMaxPicSize, xmax = 0, ymax = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t p = idx[i];
    const int64_t x = s.x[p], y = s.y[p];
    const float val = s.value[p], cval = s.cd[p];
    if (peak < val) peak = val;
    if (cpeak < cval) cpeak = cval;
    rv += cval;
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
    ymin = std::min(ymin, y);
    ymax = std::max(ymax, y);
    ++fdnpix;
  }
  o.fdnpix = fdnpix;
  o.fdflux = static_cast<float>(rv);
  o.fdpeak = cpeak;
  o.dpeak = peak;
  o.xmin = xmin;
  o.xmax = xmax;
  o.ymin = ymin;
  o.ymax = ymax;
}

void sep_analyse(const SegmentPixels& s, const int32_t* idx, int64_t n, bool robust, SepObject& o) {
  sep_preanalyse(s, idx, n, o);
  int64_t dnpix = 0, area2 = 0;
  double mx = 0.0, my = 0.0, tv = 0.0, mx2 = 0.0, my2 = 0.0, mxy = 0.0;
  const double thresh = o.thresh;
  const float peak = o.dpeak;
  const double rv = o.fdflux;
  const double thresh2 = (thresh + peak) / 2.0;
  const int64_t xmin = o.xmin, ymin = o.ymin;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t p = idx[i];
    // SEP multiplies the float pixel by the int64 offset: float32 products, float64 sums.
    const float x = static_cast<float>(s.x[p] - xmin), y = static_cast<float>(s.y[p] - ymin);
    const float cval = s.cd[p], val = s.value[p];
    tv += val;
    if (val > thresh) ++dnpix;
    if (val > thresh2) ++area2;
    const float cx = cval * x, cy = cval * y;
    mx += cx;
    my += cy;
    mx2 += cx * x;
    my2 += cy * y;
    mxy += cx * y;
  }
  const double abs_xmin = static_cast<double>(xmin + s.x0), abs_ymin = static_cast<double>(ymin + s.y0);
  const SepShape shape = sep_shape({mx, my, mx2, my2, mxy}, rv, abs_xmin, abs_ymin, robust && o.merged, o.mx, o.my,
                                    dnpix, area2, thresh, thresh2);
  if (shape.singular) o.singular = true;
  const double spread = shape.mx2 - shape.my2;
  const double theta = std::fabs(spread) > 0.0 ? std::atan2(2.0 * shape.mxy, spread) / 2.0 : std::numbers::pi / 4.0;
  o.dnpix = dnpix;
  o.dflux = tv;
  o.mx = shape.mx;
  o.my = shape.my;
  o.mx2 = shape.mx2;
  o.my2 = shape.my2;
  o.mxy = shape.mxy;
  o.a = shape.a;
  o.b = shape.b;
  o.theta = static_cast<float>(theta);
  o.cxx = shape.cxx;
  o.cyy = shape.cyy;
  o.cxy = shape.cxy;
  o.abcor = s.sextractor_weighted ? 1.0f : shape.abcor;  // SExtractor with a detection weight: 1
}

float sep_mthresh(const SegmentPixels& s, const int32_t* idx, int64_t n, int minarea) {
  if (n < minarea) return 0.0f;
  // SEP keeps the minarea brightest in a heap, but skips the (minarea+1)-th pixel of the chain
  // (it sorts there instead of inserting) and sifts down one level only; reproduced as is.
  std::vector<float> heap(static_cast<size_t>(minarea), 0.0f);
  float* h0 = heap.data();
  int64_t h = minarea, filled = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t p = idx[i];
    const float tpix = s.cd[p] - s.thresh[p];
    if (h > 0) {
      h0[filled++] = tpix;
    } else if (h != 0) {
      sep_heap_replace_root(h0, minarea, tpix);
    } else {
      std::sort(heap.begin(), heap.end());
    }
    h--;
  }
  return *h0;
}

}  // namespace deblend_detail

void glibc_rand_stream(uint64_t count, std::vector<int32_t>& out) {
  out.resize(count);
  uint32_t r[34];
  r[0] = 1u;  // srandom(1): r[i] = 16807 r[i - 1] mod (2^31 - 1)
  for (int i = 1; i < 31; ++i) r[i] = static_cast<uint32_t>((16807ull * r[i - 1]) % 2147483647ull);
  for (int i = 31; i < 34; ++i) r[i] = r[i - 31];
  // A ring of the last 34 values: position k holds r[k mod 34].
  uint64_t k = 34;
  auto step = [&]() {
    const uint32_t v = r[(k - 31) % 34] + r[(k - 3) % 34];
    r[k % 34] = v;
    ++k;
    return v;
  };
  for (int i = 0; i < 310; ++i) step();
  for (uint64_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(step() >> 1);
}

}  // namespace imflow::kernels
