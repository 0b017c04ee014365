// SEP's deblending arithmetic shared by the CPU kernel and the GPU's (host and device): glibc's
// rand_r, the generator SEP's allocation draws from, with its jump ahead; the step of
// analysemthresh's heap that replaces its root, quirks included; and analyse's shape of an object
// from its moment sums.
#pragma once
#include <cmath>
#include <cstdint>

#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

// glibc's rand_r: a 32-bit linear congruential generator stepped three times per call.
IMFLOW_HOST_DEVICE inline int32_t glibc_rand_r(uint32_t& seed) {
  uint32_t next = seed;
  next = next * 1103515245u + 12345u;
  uint32_t result = (next / 65536u) % 2048u;
  next = next * 1103515245u + 12345u;
  result <<= 10;
  result ^= (next / 65536u) % 1024u;
  next = next * 1103515245u + 12345u;
  result <<= 10;
  result ^= (next / 65536u) % 1024u;
  seed = next;
  return static_cast<int32_t>(result);
}

// The seed after `calls` calls of glibc_rand_r, in O(log calls): s -> a s + c three times per
// call, the maps composed by squaring (mod 2^32).
IMFLOW_HOST_DEVICE inline uint32_t glibc_rand_r_skip(uint32_t seed, uint64_t calls) {
  uint32_t mul = 1u, add = 0u;  // the accumulated map
  uint32_t step_mul = 1103515245u, step_add = 12345u;
  uint64_t steps = 3 * calls;
  while (steps != 0) {
    if ((steps & 1) != 0) {
      mul = mul * step_mul;
      add = add * step_mul + step_add;
    }
    step_add = step_add * step_mul + step_add;
    step_mul = step_mul * step_mul;
    steps >>= 1;
  }
  return mul * seed + add;
}

// analysemthresh's insertion into its full heap of `minarea` floats (heap[0] the smallest): a
// value above the root replaces it and sifts down as SEP's loop does, which leaves j one past the
// swapped child, so the heap's content depends on the order of the values.
IMFLOW_HOST_DEVICE inline void sep_heap_replace_root(float* heap, int64_t minarea, float value) {
  if (!(value > heap[0])) return;
  heap[0] = value;
  for (int64_t j = 0, k; (k = (j + 1) << 1) <= minarea; j = k) {
    float* heapk = heap + k;
    float* heapj = heap + j;
    if (k != minarea && *(heapk - 1) > *heapk) {
      heapk++;
      k++;
    }
    if (*heapj <= *(--heapk)) break;
    const float swap = *heapk;
    *heapk = *heapj;
    *heapj = swap;
  }
}

// An object's flux-weighted sums of SEP's float32 products x, y, x², y², xy (float64, x and y
// from its box's corner), as analyse takes them.
struct SepMomentSums {
  double mx, my, mx2, my2, mxy;
};

// What analyse makes of them: the centre (image coordinates), the second moments (with SEP's 1/12
// added where they are singular, `singular` then set), the ellipse, and abcor.
struct SepShape {
  double mx, my, mx2, my2, mxy;
  float a, b, cxx, cyy, cxy, abcor;
  bool singular;
};

// analyse's arithmetic after the sums: `flux` the object's, its box corner at (abs_xmin,
// abs_ymin); with keep_centre (robust, a merged object) the moments are taken about `centre`
// instead of the centroid; dnpix and area2 its pixels above thresh and thresh2.
IMFLOW_HOST_DEVICE inline SepShape sep_shape(const SepMomentSums& m, double flux, double abs_xmin, double abs_ymin,
                                             bool keep_centre, double centre_x, double centre_y, int64_t dnpix,
                                             int64_t area2, double thresh, double thresh2) {
  constexpr double kPi = 3.14159265358979323846;
  SepShape s{};
  double xm = m.mx / flux, ym = m.my / flux, xm2, ym2, xym;
  if (keep_centre) {
    const double xn = centre_x - abs_xmin, yn = centre_y - abs_ymin;
    xm2 = m.mx2 / flux + xn * xn - 2 * xm * xn;
    ym2 = m.my2 / flux + yn * yn - 2 * ym * yn;
    xym = m.mxy / flux + xn * yn - xm * yn - xn * ym;
    xm = xn;
    ym = yn;
  } else {
    xm2 = m.mx2 / flux - xm * xm;
    ym2 = m.my2 / flux - ym * ym;
    xym = m.mxy / flux - xm * ym;
  }
  double temp2 = xm2 * ym2 - xym * xym;
  if (temp2 < 0.00694) {
    s.singular = true;
    xm2 += 0.0833333;
    ym2 += 0.0833333;
    temp2 = xm2 * ym2 - xym * xym;
  }
  double temp = xm2 - ym2;
  temp = sqrt(0.25 * temp * temp + xym * xym);
  double pmx2 = 0.5 * (xm2 + ym2), pmy2 = pmx2;
  pmx2 += temp;
  pmy2 -= temp;
  s.mx = xm + abs_xmin;
  s.my = ym + abs_ymin;
  s.mx2 = xm2;
  s.my2 = ym2;
  s.mxy = xym;
  s.a = static_cast<float>(sqrt(pmx2));
  s.b = static_cast<float>(sqrt(pmy2));
  s.cxx = static_cast<float>(ym2 / temp2);
  s.cyy = static_cast<float>(xm2 / temp2);
  s.cxy = static_cast<float>(-2 * xym / temp2);
  const double darea = static_cast<double>(area2) - static_cast<double>(dnpix);
  const double t1t2 = thresh / thresh2;
  if (t1t2 > 0.0) {
    s.abcor = static_cast<float>((darea < 0.0 ? darea : -1.0) / (2 * kPi * log(t1t2 < 1.0 ? t1t2 : 0.99) * s.a * s.b));
    if (s.abcor > 1.0) s.abcor = 1.0f;
  } else {
    s.abcor = 1.0f;
  }
  return s;
}

}  // namespace imflow::kernels
