// The pixels of a split segment below the split levels, given to the kept branches as SEP's
// gatherup() does: each branch measured on its own pixels (barycentre, cxx/cyy/cxy, a, b, abcor),
// a Gaussian of amplitude A_i = t0 exp(n_i / (2 pi abcor a_i b_i)) (at most 4x its peak), and
// every other pixel of the segment, in SEP's chain order, given to the branch picked by the
// cumulative weights and a rand_r draw (SExtractor's: a rand() draw; or to the branch of largest
// weight). Then every object
// of the segment measured on all its pixels as sortit() does (a blended object keeps the
// barycentre of its branch).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "deblend_internal.hpp"

namespace imflow::kernels::deblend_detail {

namespace {
constexpr float kRandMax = 2147483647.0f;  // (float)RAND_MAX

// The cumulative weights of the branches at pixel p (p[0] = 0), SEP's float arithmetic; returns
// the branch of smallest distance (SEP's fallback, "iclst").
size_t cumulative_weights(const SegmentPixels& s, const GatherModel& model, int32_t pixel, std::vector<float>& p,
                          std::vector<float>* weights) {
  const int64_t x = s.x[static_cast<size_t>(pixel)] + s.x0, y = s.y[static_cast<size_t>(pixel)] + s.y0;
  float distmin = 1e+31f;
  size_t iclst = 0;
  const size_t nobj = model.branches.size() + 1;
  p[0] = 0.0f;
  for (size_t i = 1; i < nobj; ++i) {
    const SepObject& o = model.branches[i - 1];
    const float dx = static_cast<float>(static_cast<double>(x) - o.mx);
    const float dy = static_cast<float>(static_cast<double>(y) - o.my);
    const float dist = static_cast<float>(0.5 * (o.cxx * dx * dx + o.cyy * dy * dy + o.cxy * dx * dy) / o.abcor);
    const double term = dist < 70.0 ? model.amp[i - 1] * std::exp(-dist) : 0.0;
    p[i] = static_cast<float>(p[i - 1] + term);
    if (weights != nullptr) (*weights)[i] = static_cast<float>(term);
    if (dist < distmin) {
      distmin = dist;
      iclst = i;
    }
  }
  return iclst;
}
}  // namespace

void gather_model(const SegmentPixels& s, const SegmentSplit& split, GatherModel& model) {
  const size_t nb = split.branches.size();
  model.branches.assign(nb, SepObject{});
  model.amp.assign(nb, 0.0f);
  model.in_branch.assign(static_cast<size_t>(s.size()), 0);
  model.draws = 0;
  for (size_t i = 0; i < nb; ++i) {
    SepObject& o = model.branches[i];
    const auto& pixels = split.branches[i];
    o.thresh = split.levels[i];
    o.merged = true;
    sep_analyse(s, pixels.data(), static_cast<int64_t>(pixels.size()), false, o);
  }
  for (size_t i = 0; i < nb; ++i) {
    SepObject& o = model.branches[i];
    o.thresh = s.thresh0;  // past the deblending: back to the segment's threshold
    for (const int32_t p : split.branches[i]) model.in_branch[static_cast<size_t>(p)] = 1;
    const float dist = static_cast<float>(static_cast<double>(o.fdnpix) / (2 * std::numbers::pi * o.abcor * o.a * o.b));
    float amp = static_cast<float>(dist < 70.0 ? o.thresh * std::exp(dist) : 4.0 * o.fdpeak);
    if (amp > 4.0 * o.fdpeak) amp = static_cast<float>(4.0 * o.fdpeak);
    model.amp[i] = amp;
  }
  if (nb == 0) return;
  std::vector<float> p(nb + 1);
  for (int32_t pixel = 0; pixel < static_cast<int32_t>(s.size()); ++pixel) {
    if (model.in_branch[static_cast<size_t>(pixel)]) continue;
    cumulative_weights(s, model, pixel, p, nullptr);
    if (p[nb] > 1.0e-31) ++model.draws;
  }
}

void allocate_segment(const SegmentPixels& s, SegmentSplit& split, const GatherModel& model, DeblendAllocation mode,
                      uint32_t seed, const int32_t* stream, SegmentObjects& objects) {
  const size_t nb = split.branches.size();
  objects.pixels.clear();
  objects.measured.clear();
  objects.branch_sizes.clear();
  objects.blended = nb > 0;
  if (nb == 0) {
    objects.branch_sizes.push_back(static_cast<size_t>(s.size()));
    objects.pixels.emplace_back(static_cast<size_t>(s.size()));
    for (int32_t i = 0; i < static_cast<int32_t>(s.size()); ++i) objects.pixels[0][static_cast<size_t>(i)] = i;
    SepObject o;
    o.thresh = s.thresh0;
    sep_analyse(s, objects.pixels[0].data(), s.size(), true, o);
    objects.measured.push_back(o);
    return;
  }
  objects.pixels.resize(nb);
  for (size_t i = 0; i < nb; ++i) {
    objects.branch_sizes.push_back(split.branches[i].size());
    objects.pixels[i] = std::move(split.branches[i]);
  }
  std::vector<float> p(nb + 1), weights(nb + 1);
  for (int32_t pixel = 0; pixel < static_cast<int32_t>(s.size()); ++pixel) {
    if (model.in_branch[static_cast<size_t>(pixel)]) continue;
    const size_t iclst = cumulative_weights(s, model, pixel, p, &weights);
    size_t i = iclst;
    if (p[nb] > 1.0e-31) {
      if (mode != DeblendAllocation::most_probable) {
        const int32_t value = mode == DeblendAllocation::sep_random ? glibc_rand_r(seed) : *stream++;
        const float drand = p[nb] * static_cast<float>(value) / kRandMax;
        for (i = 1; i < nb + 1 && p[i] < drand; ++i) {
        }
        if (i == nb + 1) i = iclst;
      } else {
        i = 1;
        for (size_t j = 2; j <= nb; ++j)
          if (weights[j] > weights[i]) i = j;
      }
    }
    objects.pixels[i - 1].push_back(pixel);
  }
  for (size_t i = 0; i < nb; ++i) {
    SepObject o = model.branches[i];  // thresh t0, merged, the branch's barycentre
    if (s.sextractor_weighted) {      // SExtractor's sortit preanalyse: the lowest threshold of its pixels
      float t = 1e+30f;
      for (const int32_t p : objects.pixels[i]) t = std::min(t, s.thresh[static_cast<size_t>(p)]);
      o.thresh = t;
    }
    sep_analyse(s, objects.pixels[i].data(), static_cast<int64_t>(objects.pixels[i].size()), true, o);
    objects.measured.push_back(o);
  }
}

}  // namespace imflow::kernels::deblend_detail
