// Threshold segmentation against per-pixel background (and RMS) maps on the CPU, row by row;
// with the mesh grid instead of an RMS map, each RMS row is evaluated just before it is used.
#include "imflow/kernels/segment_map.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "imflow/kernels/mesh_rows.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace imflow::kernels {

namespace {
// mask[x] = finite(p) && (double)p - (double)back[x] > nsigma * (double)rms[x] (rms != nullptr),
// or > threshold (back null: 0); returns the pixels set. SSE2 does four pixels a step with the same float64
// operations (NaN compares false there as here).
int64_t threshold_row(const float* pixels, const float* back, const float* rms, double nsigma, double threshold,
                      int64_t width, uint8_t* mask) {
  int64_t x = 0, count = 0;
#if defined(__SSE2__)
  const __m128 no_sign = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
  const __m128 largest = _mm_set1_ps(std::numeric_limits<float>::max());
  const __m128d factor = _mm_set1_pd(nsigma), fixed = _mm_set1_pd(threshold);
  const __m128i one = _mm_set1_epi8(1);
  constexpr int kBitsSet[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};  // of a 4-bit movemask
  for (; x + 4 <= width; x += 4) {
    const __m128 p = _mm_loadu_ps(pixels + x), b = back != nullptr ? _mm_loadu_ps(back + x) : _mm_setzero_ps();
    const __m128 finite = _mm_cmple_ps(_mm_and_ps(p, no_sign), largest);
    const __m128d diff_lo = _mm_sub_pd(_mm_cvtps_pd(p), _mm_cvtps_pd(b));
    const __m128d diff_hi = _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(p, p)), _mm_cvtps_pd(_mm_movehl_ps(b, b)));
    __m128d limit_lo = fixed, limit_hi = fixed;
    if (rms != nullptr) {
      const __m128 r = _mm_loadu_ps(rms + x);
      limit_lo = _mm_mul_pd(factor, _mm_cvtps_pd(r));
      limit_hi = _mm_mul_pd(factor, _mm_cvtps_pd(_mm_movehl_ps(r, r)));
    }
    const __m128 above = _mm_shuffle_ps(_mm_castpd_ps(_mm_cmpgt_pd(diff_lo, limit_lo)),
                                        _mm_castpd_ps(_mm_cmpgt_pd(diff_hi, limit_hi)), _MM_SHUFFLE(2, 0, 2, 0));
    const __m128 on = _mm_and_ps(finite, above);  // four 32-bit lanes, all ones or zero
    const __m128i bytes = _mm_and_si128(_mm_packs_epi16(_mm_packs_epi32(_mm_castps_si128(on), _mm_castps_si128(on)),
                                                        _mm_setzero_si128()),
                                        one);
    const int32_t four = _mm_cvtsi128_si32(bytes);
    std::memcpy(mask + x, &four, sizeof four);
    count += kBitsSet[_mm_movemask_ps(on)];
  }
#endif
  for (; x < width; ++x) {
    const float value = pixels[x];
    const double limit = rms != nullptr ? nsigma * static_cast<double>(rms[x]) : threshold;
    const double level = back != nullptr ? static_cast<double>(back[x]) : 0.0;
    const bool on = std::isfinite(value) && static_cast<double>(value) - level > limit;
    mask[x] = on ? 1 : 0;
    count += on;
  }
  return count;
}
}  // namespace

int64_t threshold_mask_local(ConstImageView image, const float* back, const float* rms, double nsigma,
                             double global_rms, uint8_t* mask) {
  int64_t count = 0;
  const double global_threshold = nsigma * global_rms;
  for (int64_t y = 0; y < image.height; ++y) {
    const int64_t row = y * image.width;
    count += threshold_row(image.data + row, back != nullptr ? back + row : nullptr, rms != nullptr ? rms + row : nullptr, nsigma,
                           global_threshold, image.width, mask + row);
  }
  return count;
}

int64_t threshold_mask_mesh_rms(ConstImageView image, const float* back, const MeshGrid& grid, double nsigma,
                                uint8_t* mask) {
  int64_t count = 0;
  MeshRows rows(grid);
  std::vector<float> rms(static_cast<size_t>(image.width));
  for (int64_t y = 0; y < image.height; ++y) {
    const int64_t row = y * image.width;
    rows.rms(y, rms.data());
    count += threshold_row(image.data + row, back != nullptr ? back + row : nullptr, rms.data(), nsigma, 0.0, image.width,
                           mask + row);
  }
  return count;
}

}  // namespace imflow::kernels
