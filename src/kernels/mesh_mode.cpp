// SEP's backguess on a mesh histogram on the CPU: the reference loop and its prefix-sum twin
// (see include/imflow/kernels/mesh_mode.hpp).
#include "imflow/kernels/mesh_mode.hpp"

#include <algorithm>
#include <cmath>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace imflow::kernels {

namespace {

// Histograms of fewer pixels than this have exact float64 moment sums (count x bin^2 < 2^53).
constexpr int64_t kExactPixels = int64_t{1} << 29;

// The mode and sigma from the final clipped mean, median and sigma (bin units), as SEP.
MeshEstimate mode_of(double mea, double med, double sig, float qzero, float qscale) {
  MeshEstimate e;
  const double mode = std::fabs(sig) > 0.0
                          ? (std::fabs((mea - med) / sig) < 0.3 ? qzero + (2.5 * med - 1.5 * mea) * qscale
                                                                : qzero + med * qscale)
                          : qzero + mea * qscale;
  e.back = static_cast<float>(mode);
  e.sigma = static_cast<float>(sig * qscale);
  return e;
}

// SEP's median walk over bins [lcut, hcut] (lcut <= hcut) adds the low bin while lowsum <
// highsum, else the high bin, hcut - lcut + 1 steps: a merge of the sorted sequences A(j) =
// count[lcut + j] - count[lcut] and B(k) = count[hcut + 1] - count[hcut + 1 - k] that takes B on
// ties, stopping where lo = hi + 1 = s. Taking A(0..j-1) and B(0..k-1) (j + k = steps) is that
// merge's prefix iff A(j-1) < B(k), true up to the stopping j, false after; with s = lcut + j
// the test reads count[s-1] + count[s] < count[lcut] + count[hcut+1]. Returns s (= the walk's lo).
int64_t median_split(const int32_t* count, int64_t lcut, int64_t hcut) {
  const int64_t target = static_cast<int64_t>(count[lcut]) + count[hcut + 1];
  int64_t s = lcut, n = hcut + 1 - lcut;  // the test holds at s; look in (s, s + n]
  while (n > 0) {
    const int64_t half = n / 2;
    const int64_t mid = s + half + 1;
    if (static_cast<int64_t>(count[mid - 1]) + count[mid] < target) {
      s = mid;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  return s;
}

// Moves the float64-exact moment sums of bins [lo, hi] to bins [new_lo, new_hi]: sums(a, b) =
// P(b + 1) - P(a) for the prefix sums P of count x bin and count x bin^2, so the change is what
// lies between the old and the new ends, whatever the overlap.
struct Moments {
  int64_t lo, hi, first = 0, second = 0;
  void add(const int32_t* histo, int64_t from, int64_t to, int64_t sign) {  // bins [from, to)
    for (int64_t i = from; i < to; ++i) {
      const int64_t p = static_cast<int64_t>(histo[i]) * i;
      first += sign * p;
      second += sign * p * i;
    }
  }
  void move_to(const int32_t* histo, int64_t new_lo, int64_t new_hi) {
    if (new_hi > hi) add(histo, hi + 1, new_hi + 1, 1);
    else add(histo, new_hi + 1, hi + 1, -1);
    if (new_lo < lo) add(histo, new_lo, lo, 1);
    else add(histo, lo, new_lo, -1);
    lo = new_lo;
    hi = new_hi;
  }
};

// The pixel count and moments of every bin, four bins a step in two independent pairs of lanes:
// float64 holds their integer sums (below 2^53 when the count is below 2^29) exactly in any
// order, so the lanes need not add in bin order.
Moments all_bins(const int32_t* histo, int64_t nlevels, int64_t& total) {
  using Pair = double __attribute__((vector_size(16)));
  Pair count_a = {0.0, 0.0}, first_a = count_a, second_a = count_a;
  Pair count_b = count_a, first_b = count_a, second_b = count_a;
  Pair bin_a = {0.0, 1.0}, bin_b = {2.0, 3.0};
  int64_t i = 0;
  for (; i + 4 <= nlevels; i += 4) {
    const Pair pix_a = {static_cast<double>(histo[i]), static_cast<double>(histo[i + 1])};
    const Pair pix_b = {static_cast<double>(histo[i + 2]), static_cast<double>(histo[i + 3])};
    const Pair weighted_a = pix_a * bin_a, weighted_b = pix_b * bin_b;
    count_a += pix_a;
    count_b += pix_b;
    first_a += weighted_a;
    first_b += weighted_b;
    second_a += weighted_a * bin_a;
    second_b += weighted_b * bin_b;
    bin_a += 4.0;
    bin_b += 4.0;
  }
  const Pair count = count_a + count_b, first = first_a + first_b, second = second_a + second_b;
  total = static_cast<int64_t>(count[0] + count[1]);
  Moments m{0, nlevels - 1};
  m.first = static_cast<int64_t>(first[0] + first[1]);
  m.second = static_cast<int64_t>(second[0] + second[1]);
  for (; i < nlevels; ++i) total += histo[i];
  m.add(histo, nlevels / 4 * 4, nlevels, 1);
  return m;
}

// count[i] = the pixels in bins [0, i), for i in [0, nlevels] (the total below 2^31).
void prefix_counts(const int32_t* histo, int64_t nlevels, int32_t* count) {
  count[0] = 0;
  int64_t i = 0;
  int32_t total = 0;
#if defined(__SSE2__)
  __m128i carry = _mm_setzero_si128();
  for (; i + 4 <= nlevels; i += 4) {  // an in-register prefix sum of four bins, plus the bins before
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(histo + i));
    x = _mm_add_epi32(x, _mm_slli_si128(x, 4));
    x = _mm_add_epi32(x, _mm_slli_si128(x, 8));
    x = _mm_add_epi32(x, carry);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(count + i + 1), x);
    carry = _mm_shuffle_epi32(x, _MM_SHUFFLE(3, 3, 3, 3));
  }
  total = _mm_cvtsi128_si32(carry);
#endif
  for (; i < nlevels; ++i) {
    total += histo[i];
    count[i + 1] = total;
  }
}

// The end of one of SEP's clipping rounds (shared by the reference loop and the prefix-sum
// version): the interpolated median from the split (bins up to hi below, from lo = hi + 1 above,
// lowsum / highsum pixels), the mean and sigma from the kept bins' sums (mea, sig in: sums of
// i n_i and i^2 n_i), and the next cuts at med -/+ 3 sigma. Counts below 2^53 convert exactly.
void finish_round(const int32_t* histo, int64_t lo, int64_t hi, double lowsum, double highsum, double sum, int64_t top,
                  double& mea, double& sig, double& med, int64_t& lcut, int64_t& hcut) {
  med = hi >= 0 ? (static_cast<double>(hi) + 0.5 +
                   (highsum - lowsum) / (2.0 * static_cast<double>(histo[lo] > histo[hi] ? histo[lo] : histo[hi])))
                : 0.0;
  if (sum != 0.0) {
    mea /= sum;
    sig = sig / sum - mea * mea;
  }
  sig = sig > 0.0 ? std::sqrt(sig) : 0.0;
  double cut = med - 3.0 * sig;
  lcut = cut > 0.0 ? static_cast<int64_t>(cut + 0.5) : 0;
  cut = med + 3.0 * sig;
  hcut = cut < static_cast<double>(top) ? static_cast<int64_t>(cut > 0.0 ? cut + 0.5 : cut - 0.5) : top;
}

}  // namespace

MeshEstimate histogram_mode_reference(const int32_t* histo, int64_t nlevels, float mean_f, float qzero,
                                      float qscale) {
  const int64_t top = nlevels - 1;
  int64_t lcut = 0, hcut = top;
  double sig = 10.0 * static_cast<double>(top), sig1 = 1.0;
  double mea = mean_f, med = mean_f;
  for (int n = 100; n-- && sig >= 0.1 && std::fabs(sig / sig1 - 1.0) > 1e-4;) {
    sig1 = sig;
    uint64_t sum = 0, lowsum = 0, highsum = 0;
    mea = sig = 0.0;
    int64_t lo = lcut, hi = hcut;
    for (int64_t i = lcut; i <= hcut; ++i) {
      if (lowsum < highsum) lowsum += static_cast<uint64_t>(histo[lo++]);
      else highsum += static_cast<uint64_t>(histo[hi--]);
      const int64_t pix = histo[i];
      sum += static_cast<uint64_t>(pix);
      const double dpix = static_cast<double>(pix) * static_cast<double>(i);
      mea += dpix;
      sig += dpix * static_cast<double>(i);
    }
    finish_round(histo, lo, hi, static_cast<double>(lowsum), static_cast<double>(highsum), static_cast<double>(sum), top,
                 mea, sig, med, lcut, hcut);
  }
  return mode_of(mea, med, sig, qzero, qscale);
}

MeshEstimate histogram_mode(const int32_t* histo, int64_t nlevels, float mean_f, float qzero, float qscale,
                            std::vector<int32_t>& prefix) {
  int64_t total = 0;
  Moments moments = all_bins(histo, nlevels, total);
  if (total >= kExactPixels) return histogram_mode_reference(histo, nlevels, mean_f, qzero, qscale);
  prefix.resize(static_cast<size_t>(nlevels) + 1);
  int32_t* count = prefix.data();
  prefix_counts(histo, nlevels, count);
  const int64_t top = nlevels - 1;

  int64_t lcut = 0, hcut = top;
  double sig = 10.0 * static_cast<double>(top), sig1 = 1.0;
  double mea = mean_f, med = mean_f;
  for (int n = 100; n-- && sig >= 0.1 && std::fabs(sig / sig1 - 1.0) > 1e-4;) {
    sig1 = sig;
    int64_t sum = 0, lowsum = 0, highsum = 0;
    mea = sig = 0.0;
    int64_t lo = lcut, hi = hcut;
    if (lcut <= hcut) {  // then 0 <= lcut <= hcut <= top
      moments.move_to(histo, lcut, hcut);
      sum = static_cast<int64_t>(count[hcut + 1]) - count[lcut];
      mea = static_cast<double>(moments.first);
      sig = static_cast<double>(moments.second);
      lo = median_split(count, lcut, hcut);
      hi = lo - 1;
      lowsum = static_cast<int64_t>(count[lo]) - count[lcut];
      highsum = static_cast<int64_t>(count[hcut + 1]) - count[lo];
    }
    finish_round(histo, lo, hi, static_cast<double>(lowsum), static_cast<double>(highsum), static_cast<double>(sum), top,
                 mea, sig, med, lcut, hcut);
  }
  return mode_of(mea, med, sig, qzero, qscale);
}

}  // namespace imflow::kernels
