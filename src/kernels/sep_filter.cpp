// SEP 1.4.1's detection filters on the CPU (kernels/sep_filter.hpp): each output row is SEP's
// line buffer computation, kernel entry by kernel entry over the row in float32; rows in parallel.
#include "imflow/kernels/sep_filter.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace imflow::kernels {

SepFilterKernel sep_filter_kernel(ConstImageView kernel) {
  if (kernel.width < 1 || kernel.height < 1 || kernel.data == nullptr)
    throw std::invalid_argument("filter_kernel: an empty kernel");
  const int64_t n = kernel.width * kernel.height;
  float sum = 0.0f;  // SEP: a float, incremented by fabs() in double
  for (int64_t i = 0; i < n; ++i) sum = static_cast<float>(sum + std::fabs(static_cast<double>(kernel.data[i])));
  if (!(sum != 0.0f)) throw std::invalid_argument("filter_kernel: the entries sum to 0 in magnitude");
  SepFilterKernel out{std::vector<float>(static_cast<size_t>(n)), kernel.width, kernel.height};
  for (int64_t i = 0; i < n; ++i) out.values[static_cast<size_t>(i)] = kernel.data[i] / sum;
  return out;
}

namespace {
// The output range [lo, hi) of a kernel column offset dcx and the source shift.
struct Span {
  int64_t lo, hi;
};
Span span_of(int64_t dcx, int64_t width) { return dcx >= 0 ? Span{0, width - dcx} : Span{-dcx, width}; }

template <typename Body>
void for_rows(int64_t height, Body body) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, height, 16), [&](const tbb::blocked_range<int64_t>& r) {
    std::vector<float> scratch;
    for (int64_t y = r.begin(); y != r.end(); ++y) body(y, scratch);
  });
}
}  // namespace

void sep_convolve(ConstImageView image, const SepFilterKernel& kernel, float* out) {
  const int64_t w = image.width, kw = kernel.width, half = kw / 2;
  for_rows(image.height, [&](int64_t y, std::vector<float>&) {
    float* dst = out + y * w;
    std::fill(dst, dst + w, 0.0f);
    const SepFilterWindow win = sep_filter_window(y, image.height, kernel.height);
    for (int64_t cy = 0; cy < win.rows; ++cy) {
      const float* line = image.data + (win.y0 + cy) * w;
      const float* k = kernel.values.data() + (win.first + cy) * kw;
      for (int64_t cx = 0; cx < kw; ++cx) {
        const float c = k[cx];
        const int64_t dcx = cx - half;
        const Span s = span_of(dcx, w);
        const float* src = line + dcx;
        for (int64_t x = s.lo; x < s.hi; ++x) dst[x] += c * src[x];
      }
    }
  });
}

void sep_matched_filter(ConstImageView image, const float* noise, SepNoiseKind kind, const SepFilterKernel& kernel,
                        float* out) {
  const int64_t w = image.width, kw = kernel.width, half = kw / 2;
  const bool variance = kind == SepNoiseKind::variance;
  for_rows(image.height, [&](int64_t y, std::vector<float>& denom) {
    float* num = out + y * w;
    std::fill(num, num + w, 0.0f);
    denom.assign(static_cast<size_t>(w), 0.0f);
    const SepFilterWindow win = sep_filter_window(y, image.height, kernel.height);
    for (int64_t cy = 0; cy < win.rows; ++cy) {
      const float* line = image.data + (win.y0 + cy) * w;
      const float* nline = noise + (win.y0 + cy) * w;
      const float* k = kernel.values.data() + (win.first + cy) * kw;
      for (int64_t cx = 0; cx < kw; ++cx) {
        const float c = k[cx], c2 = c * c;
        const int64_t dcx = cx - half;
        const Span s = span_of(dcx, w);
        const float* src = line + dcx;
        const float* nsrc = nline + dcx;
        for (int64_t x = s.lo; x < s.hi; ++x) {
          const float v = variance ? nsrc[x] : nsrc[x] * nsrc[x];
          if (v != 0.0f) {
            num[x] += c * src[x] / v;
            denom[static_cast<size_t>(x)] += c2 / v;
          }
        }
      }
    }
    for (int64_t x = 0; x < w; ++x)
      num[x] = static_cast<float>(static_cast<double>(num[x]) / std::sqrt(static_cast<double>(denom[static_cast<size_t>(x)])));
  });
}

}  // namespace imflow::kernels
