// SEP's arithmetic for the GPU deblending (cuda/deblend.hpp), host and device: the same
// operations in the same order and precision as the CPU kernel (src/kernels/deblend_*.cpp), so
// that the results are bit-identical. Compiled without FMA contraction (cuda/CMakeLists.txt).
//   - glibc's expf (the CPU kernel calls std::exp on floats), ported: CUDA's expf rounds
//     differently in the last bit, and a weight or amplitude one ulp off can move a pixel;
//   - SEP's analyse (preanalyse included, no error terms, no theta) and analysemthresh;
//   - the allocation weights and CLEAN's Moffat test.
// Double pow and log (levels, abcor, CLEAN) are CUDA's; their results pass through float
// conversions, where a last-bit difference from glibc's shows with probability ~2^-29 a call.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cuda/deblend_team.hpp"
#include "cuda/deblend_walk.hpp"
#include "cuda/heap_sort.hpp"
#include "imflow/kernels/host_device.hpp"
#include "imflow/kernels/sep_deblend_arith.hpp"

namespace imflow::cuda::deblend_detail {

// ---- glibc's expf (sysdeps/ieee754/flt-32/e_expf.c: a 32-entry table of 2^(i/32) and a cubic
// in double precision, rounded once to float). Equal to glibc's (its FMA and plain builds) on
// every 8th float of |x| < 110.
#define IMFLOW_DEBLEND_EXP2F_TABLE                                                                      \
  {0x3ff0000000000000ull, 0x3fefd9b0d3158574ull, 0x3fefb5586cf9890full, 0x3fef9301d0125b51ull,         \
   0x3fef72b83c7d517bull, 0x3fef54873168b9aaull, 0x3fef387a6e756238ull, 0x3fef1e9df51fdee1ull,         \
   0x3fef06fe0a31b715ull, 0x3feef1a7373aa9cbull, 0x3feedea64c123422ull, 0x3feece086061892dull,         \
   0x3feebfdad5362a27ull, 0x3feeb42b569d4f82ull, 0x3feeab07dd485429ull, 0x3feea47eb03a5585ull,         \
   0x3feea09e667f3bcdull, 0x3fee9f75e8ec5f74ull, 0x3feea11473eb0187ull, 0x3feea589994cce13ull,         \
   0x3feeace5422aa0dbull, 0x3feeb737b0cdc5e5ull, 0x3feec49182a3f090ull, 0x3feed503b23e255dull,         \
   0x3feee89f995ad3adull, 0x3feeff76f2fb5e47ull, 0x3fef199bdd85529cull, 0x3fef3720dcef9069ull,         \
   0x3fef5818dcfba487ull, 0x3fef7c97337b9b5full, 0x3fefa4afa2a490daull, 0x3fefd0765b6e4540ull}

namespace sep_math {
#ifdef __CUDACC__
static __constant__ const uint64_t kExp2fTableDevice[32] = IMFLOW_DEBLEND_EXP2F_TABLE;
#endif
static constexpr uint64_t kExp2fTableHost[32] = IMFLOW_DEBLEND_EXP2F_TABLE;

IMFLOW_HOST_DEVICE inline uint64_t exp2f_table(uint32_t i) {
#ifdef __CUDA_ARCH__
  return kExp2fTableDevice[i];
#else
  return kExp2fTableHost[i];
#endif
}

IMFLOW_HOST_DEVICE inline uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
IMFLOW_HOST_DEVICE inline uint64_t bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
IMFLOW_HOST_DEVICE inline double from_bits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}
}  // namespace sep_math

IMFLOW_HOST_DEVICE inline float sep_expf(float x) {
  const uint32_t abstop = (sep_math::bits(x) >> 20) & 0x7ffu;
  if (abstop >= (sep_math::bits(88.0f) >> 20)) {
    if (sep_math::bits(x) == sep_math::bits(-INFINITY)) return 0.0f;
    if (abstop >= (sep_math::bits(INFINITY) >> 20)) return x + x;
    if (x > 0x1.62e42ep6f) return INFINITY;
    if (x < -0x1.9fe368p6f) return 0.0f;
  }
  constexpr double kInvLn2N = 0x1.71547652b82fep+0 * 32, kShift = 0x1.8p+52;
  constexpr double kC0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32, kC1 = 0x1.ebfce50fac4f3p-3 / 32 / 32,
                   kC2 = 0x1.62e42ff0c52d6p-1 / 32;
  const double xd = x;
  double z = kInvLn2N * xd;
  double kd = z + kShift;
  const uint64_t ki = sep_math::bits(kd);
  kd -= kShift;
  const double r = z - kd;
  uint64_t t = sep_math::exp2f_table(static_cast<uint32_t>(ki % 32));
  t += ki << (52 - 5);
  const double s = sep_math::from_bits(t);
  z = kC0 * r + kC1;
  const double r2 = r * r;
  double y = kC2 * r + 1;
  y = z * r2 + y;
  y = y * s;
  return static_cast<float>(y);
}

// ---- SEP's object fields that the allocation and CLEAN use (deblend_detail::SepObject).
struct SepObject {
  double mx = 0.0, my = 0.0;  // absolute (image) coordinates
  float thresh = 0.0f, mthresh = 0.0f;
  float a = 0.0f, b = 0.0f, cxx = 0.0f, cyy = 0.0f, cxy = 0.0f, abcor = 0.0f;
  float fdflux = 0.0f, fdpeak = 0.0f;
  int64_t fdnpix = 0;
  int64_t ymin = 0, ymax = 0;  // its rows (image coordinates)
  bool merged = false;
  bool singular = false;  // SEP's OBJ_SINGU: some analyse of it found singular moments (or-ed)
};

constexpr double kPi = 3.14159265358979323846;

// SEP's analyse (preanalyse, then the moments) over n pixels, px(i) the image index of the
// i-th in SEP's order; robust: a merged object keeps o.mx, o.my as its centre. Every lane ends
// with the same o. The box, the counts and the peaks are the team's combination of each lane's;
// the float64 sums are taken in SEP's order (OrderedSums: a warp's team needs its stage).
template <class TeamT, class PixelAt>
IMFLOW_HOST_DEVICE void sep_analyse(const TeamT& team, const Pixels& im, const PixelAt& px, int64_t n, bool robust,
                                    SepObject& o) {
  auto values = [&](int32_t p, float& cval, float& val) {
    cval = im.cd[p];
    val = im.value[p];
  };
  auto min_of = [](int64_t u, int64_t v) { return v < u ? v : u; };
  auto max_of = [](int64_t u, int64_t v) { return v > u ? v : u; };
  auto sum_of = [](int64_t u, int64_t v) { return u + v; };
  // preanalyse
  OrderedSums<1> flux;
  FirstMax peak(-1e+30f), cpeak(-1e+30f);
  int64_t xmin = 2 * 1048576, ymin = 2 * 1048576, xmax = 0, ymax = 0;
  for_each_chunk(team, im, px, n, values, [&](int64_t start, int count, int32_t x, int32_t y, float cval, float val) {
    if (team.lane < count) {
      xmin = min_of(xmin, x);
      xmax = max_of(xmax, x);
      ymin = min_of(ymin, y);
      ymax = max_of(ymax, y);
      peak.add(val, start + team.lane);
      cpeak.add(cval, start + team.lane);
    }
    flux.add(team, count, {cval});
  });
  xmin = team_reduce(team, xmin, min_of);
  xmax = team_reduce(team, xmax, max_of);
  ymin = team_reduce(team, ymin, min_of);
  ymax = team_reduce(team, ymax, max_of);
  const float peak_value = peak.result(team);
  o.fdnpix = n;
  o.fdflux = static_cast<float>(flux.sum(team, 0));
  o.fdpeak = cpeak.result(team);
  o.ymin = ymin;
  o.ymax = ymax;
  // analyse
  int64_t dnpix = 0, area2 = 0;
  OrderedSums<5> moments;  // mx, my, mx2, my2, mxy
  const double thresh = o.thresh;
  const double rvf = o.fdflux;
  const double thresh2 = (thresh + peak_value) / 2.0;
  for_each_chunk(team, im, px, n, values, [&](int64_t, int count, int32_t px_, int32_t py_, float cval, float val) {
    const float x = static_cast<float>(px_ - xmin), y = static_cast<float>(py_ - ymin);
    if (team.lane < count && val > thresh) ++dnpix;
    if (team.lane < count && val > thresh2) ++area2;
    // SEP's float32 products, summed in float64 in its order.
    const float cx = cval * x, cy = cval * y;
    moments.add(team, count, {cx, cy, cx * x, cy * y, cx * y});
  });
  dnpix = team_reduce(team, dnpix, sum_of);
  area2 = team_reduce(team, area2, sum_of);
  const double mx = moments.sum(team, 0), my = moments.sum(team, 1), mx2 = moments.sum(team, 2),
               my2 = moments.sum(team, 3), mxy = moments.sum(team, 4);
  const double abs_xmin = static_cast<double>(xmin), abs_ymin = static_cast<double>(ymin);
  const kernels::SepShape shape = kernels::sep_shape({mx, my, mx2, my2, mxy}, rvf, abs_xmin, abs_ymin, robust && o.merged,
                                                     o.mx, o.my, dnpix, area2, thresh, thresh2);
  if (shape.singular) o.singular = true;
  o.mx = shape.mx;
  o.my = shape.my;
  o.a = shape.a;
  o.b = shape.b;
  o.cxx = shape.cxx;
  o.cyy = shape.cyy;
  o.cxy = shape.cxy;
  o.abcor = shape.abcor;
}

// analysemthresh: SEP's heap of the minarea brightest (detection - threshold), quirks included
// (kernels' sep_mthresh); `heap` holds minarea floats, kept by lane 0. Every lane gets the result.
// Once the heap is full a pixel changes it only when above its root, which only grows: past the
// first chunk lane 0 visits, in order, only the chunk's pixels above the root it starts with.
template <class TeamT, class PixelAt>
IMFLOW_HOST_DEVICE float sep_mthresh(const TeamT& team, const Pixels& im, const PixelAt& px, int64_t n, int minarea,
                                     float* heap) {
  if (n < minarea) return 0.0f;
  int64_t h = minarea, filled = 0;
  auto load = [&](int32_t p, float& tpix, float&) { tpix = im.cd[p] - im.threshold(p); };
  for_each_chunk(team, im, px, n, load, [&](int64_t, int count, int32_t, int32_t, float tpix, float) {
    if (h >= 0) {  // the heap fills, then is sorted (SEP skips that pixel), in this chunk
      for (int j = 0; j < count; ++j, --h) {
        const float t = team.shfl(tpix, j);
        if (team.lane != 0) continue;
        if (h > 0) heap[filled++] = t;
        else if (h != 0) kernels::sep_heap_replace_root(heap, minarea, t);
        else heap_sort_ascending(heap, static_cast<int64_t>(minarea));
      }
      return;
    }
    float root = 0.0f;
    if (team.lane == 0) root = heap[0];
    root = team.shfl(root, 0);
    // The lanes above the root, lowest (first in order) first.
    for (uint32_t above = team.ballot(team.lane < count && tpix > root); above != 0; above &= above - 1) {
      const float t = team.shfl(tpix, lowest_bit(above));
      if (team.lane == 0) kernels::sep_heap_replace_root(heap, minarea, t);
    }
    h -= count;
  });
  float result = 0.0f;
  if (team.lane == 0) result = heap[0];
  return team.shfl(result, 0);
}

// The Gaussian model of one kept branch for the allocation (gather_model).
struct BranchModel {
  double mx = 0.0, my = 0.0;
  float cxx = 0.0f, cyy = 0.0f, cxy = 0.0f, abcor = 1.0f, amp = 0.0f;
  bool singular = false;  // the branch's analyse found singular moments
};

// The model's amplitude of branch o (o.thresh already the segment's threshold).
IMFLOW_HOST_DEVICE inline float branch_amplitude(const SepObject& o) {
  const float dist = static_cast<float>(static_cast<double>(o.fdnpix) / (2 * kPi * o.abcor * o.a * o.b));
  float amp = static_cast<float>(dist < 70.0 ? o.thresh * sep_expf(dist) : 4.0 * o.fdpeak);
  if (amp > 4.0 * o.fdpeak) amp = static_cast<float>(4.0 * o.fdpeak);
  return amp;
}

// The weight of branch m at pixel (x, y) (the term SEP adds to the cumulative p[]) and its
// distance; see cumulative_weights in src/kernels/deblend_allocate.cpp.
IMFLOW_HOST_DEVICE inline double branch_term(const BranchModel& m, int64_t x, int64_t y, float& dist) {
  const float dx = static_cast<float>(static_cast<double>(x) - m.mx);
  const float dy = static_cast<float>(static_cast<double>(y) - m.my);
  dist = static_cast<float>(0.5 * (m.cxx * dx * dx + m.cyy * dy * dy + m.cxy * dx * dy) / m.abcor);
  return dist < 70.0 ? static_cast<double>(m.amp * sep_expf(-dist)) : 0.0;
}

constexpr float kRandMax = 2147483647.0f;  // (float)RAND_MAX

// ---- CLEAN (extract.c's clean): SEP's Moffat amplitude and alpha, and the test whether the
// profile of `big` at offset (dx, dy) exceeds small's mthresh.
struct CleanObject {
  double mx = 0.0, my = 0.0;
  float a = 0.0f, b = 0.0f, cxx = 0.0f, cyy = 0.0f, cxy = 0.0f, abcor = 0.0f, fdflux = 0.0f, thresh = 0.0f,
        mthresh = 0.0f;
  int64_t fdnpix = 0;
  int32_t ymin = 0, ymax = 0, last_row = 0;  // its rows and its segment's last row (SExtractor's CLEAN)
  bool singular = false;
};

IMFLOW_HOST_DEVICE inline void clean_moffat(const CleanObject& o, double beta, double& amp, double& alpha) {
  const double unitarea = kPi * o.a * o.b;
  amp = o.fdflux / (2 * unitarea * o.abcor);
  alpha = (pow(amp / o.thresh, 1.0 / beta) - 1) * unitarea / static_cast<double>(o.fdnpix);
}

IMFLOW_HOST_DEVICE inline bool clean_eats(const CleanObject& big, double amp, double alpha, double beta, float dx, float dy,
                                          const CleanObject& small) {
  const double val = 1 + alpha * (big.cxx * dx * dx + big.cyy * dy * dy + big.cxy * dx * dy);
  return val > 1.0 && static_cast<float>(val < 1e10 ? amp * pow(val, -beta) : 0.0) > small.mthresh;
}

// What SEP's clean loop does with the pair (i, j), i < j, both surviving: 0 nothing, 1 i
// removes j, 2 j removes i.
IMFLOW_HOST_DEVICE inline int clean_outcome(const CleanObject& o1, const CleanObject& o2, double beta) {
  constexpr double kCleanZone = 10.0;
  const float dx = static_cast<float>(o1.mx - o2.mx);
  const float dy = static_cast<float>(o1.my - o2.my);
  float rlim = o1.a + o2.a;
  rlim *= rlim;
  if (dx * dx + dy * dy > rlim * kCleanZone * kCleanZone) return 0;
  double amp, alpha;
  if (o2.fdflux < o1.fdflux) {
    clean_moffat(o1, beta, amp, alpha);
    return clean_eats(o1, amp, alpha, beta, dx, dy, o2) ? 1 : 0;
  }
  clean_moffat(o2, beta, amp, alpha);
  return clean_eats(o2, amp, alpha, beta, dx, dy, o1) ? 2 : 0;
}

}  // namespace imflow::cuda::deblend_detail
