// SExtractor's weight-map rescaling (weight_scale.hpp): its weighted backstat and backhisto for
// the map's meshes, SEP's backguess (histogram_mode) and filterback (fill_and_filter) on them,
// and the median ratio of the image's noise to the map's.
#include "imflow/kernels/weight_scale.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "imflow/kernels/mesh_mode.hpp"
#include "sep_backstat.hpp"

namespace imflow::kernels {

namespace {

struct RunningMoments {
  double sum = 0.0, squares = 0.0;
  int64_t n = 0;
  void add(double v) {
    sum += v;
    squares += v * v;
    ++n;
  }
  double mean() const { return sum / static_cast<double>(n); }
  double sigma() const {
    const double m = mean(), var = squares / static_cast<double>(n) - m * m;
    return var > 0.0 ? std::sqrt(var) : 0.0;
  }
};

// A histogram's scale as backstat sets it from the clipped moments, and a value's bin.
struct MomentsHistogram : backstat::Quantisation {
  explicit MomentsHistogram(const RunningMoments& m) : Quantisation(m.mean(), m.sigma(), m.n) {}
  // The bin of v, or -1 outside [0, nlevels) (SExtractor's (int)(v / qscale + cste)).
  int64_t bin(float v) const {
    const float f = v / qscale + cste;
    return f > -1.0f && f < static_cast<float>(nlevels) ? static_cast<int64_t>(static_cast<int32_t>(f)) : -1;
  }
};

bool usable(float pixel, float variance) { return std::isfinite(pixel) && pixel > -backstat::kBig && variance < backstat::kBig; }

// The variance mode and sigma of one mesh (w x h pixels at offset `origin` of both maps).
MeshEstimate variance_mesh(const float* pixels, const float* variance, int64_t stride, int64_t w, int64_t h,
                           std::vector<int32_t>& histogram, std::vector<int32_t>& prefix) {
  RunningMoments image, weights;
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      const float p = pixels[y * stride + x], v = variance[y * stride + x];
      if (!usable(p, v)) continue;
      image.add(p);
      weights.add(v);
    }
  }
  if (static_cast<float>(image.n) < static_cast<float>(static_cast<double>(w * h) * backstat::kMinGoodFraction)) return {};
  const auto lcut = static_cast<float>(image.mean() - 2.0 * image.sigma());
  const auto hcut = static_cast<float>(image.mean() + 2.0 * image.sigma());
  const auto wlcut = static_cast<float>(weights.mean() - 2.0 * weights.sigma());
  const auto whcut = static_cast<float>(weights.mean() + 2.0 * weights.sigma());
  RunningMoments clipped, wclipped;
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      const float p = pixels[y * stride + x], v = variance[y * stride + x];
      if (!usable(p, v) || !(p <= hcut && p >= lcut)) continue;
      clipped.add(p);
      if (v <= whcut && v >= wlcut) wclipped.add(v);
    }
  }
  if (clipped.n == 0 || wclipped.n == 0) return {};
  const MomentsHistogram q(clipped), wq(wclipped);
  histogram.assign(static_cast<size_t>(wq.nlevels) + 1, 0);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      const float p = pixels[y * stride + x], v = variance[y * stride + x];
      if (!(v < backstat::kBig) || q.bin(p) < 0) continue;
      if (const int64_t b = wq.bin(v); b >= 0) ++histogram[static_cast<size_t>(b)];
    }
  }
  return histogram_mode(histogram.data(), wq.nlevels, static_cast<float>(wclipped.mean()), wq.qzero, wq.qscale, prefix);
}

float float_median(std::vector<float>& values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  if (n < 2) return values[0];
  return n % 2 == 1 ? values[n / 2] : static_cast<float>((values[n / 2 - 1] + values[n / 2]) / 2.0);
}
}  // namespace

WeightScale weight_scale(ConstImageView image, const float* variance, const MeshParams& params, const MeshGrid& grid) {
  MeshGrid weights;
  weights.nx = grid.nx;
  weights.ny = grid.ny;
  weights.width = grid.width;
  weights.height = grid.height;
  weights.mesh_width = params.mesh_width;
  weights.mesh_height = params.mesh_height;
  weights.back.resize(grid.back.size());
  weights.sigma.resize(grid.sigma.size());
  std::vector<int32_t> histogram, prefix;
  for (int64_t my = 0; my < grid.ny; ++my) {
    const int64_t y0 = my * params.mesh_height, h = std::min(params.mesh_height, image.height - y0);
    for (int64_t mx = 0; mx < grid.nx; ++mx) {
      const int64_t x0 = mx * params.mesh_width, w = std::min(params.mesh_width, image.width - x0);
      const int64_t offset = y0 * image.width + x0;
      const MeshEstimate e = variance_mesh(image.data + offset, variance + offset, image.width, w, h, histogram, prefix);
      weights.back[static_cast<size_t>(my * grid.nx + mx)] = e.back;
      weights.sigma[static_cast<size_t>(my * grid.nx + mx)] = e.sigma;
    }
  }
  fill_and_filter(weights, params.filter_width, params.filter_height, params.filter_threshold);
  std::vector<float> ratios;
  for (size_t i = 0; i < weights.back.size(); ++i) {
    if (!(weights.back[i] > 0.0f)) continue;
    const auto ratio = static_cast<float>(grid.sigma[i] / std::sqrt(static_cast<double>(weights.back[i])));
    if (ratio > 0.0f) ratios.push_back(ratio);
  }
  WeightScale scale;
  scale.meshes = static_cast<int64_t>(ratios.size());
  if (!ratios.empty()) scale.factor = float_median(ratios);
  return scale;
}

}  // namespace imflow::kernels
