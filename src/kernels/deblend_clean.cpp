// CLEAN as SEP's clean() does it, once over the final object list in catalog order: for each
// surviving object i and each later surviving j within 10 (a_i + a_j), the brighter (by flux) as
// a Moffat profile of beta = clean_param removes the fainter when the profile at the fainter's
// centre exceeds its mthresh. A grid of cells finds the close pairs (SEP compares every pair);
// they are visited in SEP's order, so the result is SEP's.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "deblend_internal.hpp"

namespace imflow::kernels::deblend_detail {

namespace {
constexpr double kPi = 3.14159265358979323846;
constexpr double kCleanZone = 10.0;

// SEP's Moffat amplitude and alpha of object o.
void moffat(const SepObject& o, double beta, double& amp, double& alpha) {
  const double unitarea = kPi * o.a * o.b;
  amp = o.fdflux / (2 * unitarea * o.abcor);
  alpha = (std::pow(amp / o.thresh, 1.0 / beta) - 1) * unitarea / static_cast<double>(o.fdnpix);
}

// Whether the profile (amp, alpha) of `big` at offset (dx, dy) exceeds small's mthresh.
bool eats(const SepObject& big, double amp, double alpha, double beta, float dx, float dy, const SepObject& small) {
  const double val = 1 + alpha * (big.cxx * dx * dx + big.cyy * dy * dy + big.cxy * dx * dy);
  return val > 1.0 && static_cast<float>(val < 1e10 ? amp * std::pow(val, -beta) : 0.0) > small.mthresh;
}
}  // namespace

void sep_clean(const std::vector<const SepObject*>& objects, double clean_param, std::vector<uint8_t>& survives) {
  const size_t n = objects.size();
  survives.assign(n, 1);
  if (n < 2) return;
  const double beta = clean_param;
  // Each object's reach: a pair is compared when dx^2 + dy^2 <= 100 (a_i + a_j)^2, so their
  // squares of half-side 10 a + 1 overlap. Objects with a non-finite a or centre meet everyone
  // (SEP's test never skips them).
  std::vector<double> reach(n);
  std::vector<uint8_t> everywhere(n, 0);
  std::vector<double> finite_reach;
  for (size_t i = 0; i < n; ++i) {
    const SepObject& o = *objects[i];
    reach[i] = kCleanZone * o.a + 1.0;
    if (!std::isfinite(reach[i]) || !std::isfinite(o.mx) || !std::isfinite(o.my)) {
      everywhere[i] = 1;
    } else {
      finite_reach.push_back(reach[i]);
    }
  }
  double cell = 32.0;
  if (!finite_reach.empty()) {
    std::nth_element(finite_reach.begin(), finite_reach.begin() + static_cast<long>(finite_reach.size() / 2),
                     finite_reach.end());
    cell = std::max(8.0, 2.0 * finite_reach[finite_reach.size() / 2]);
  }
  auto key = [](int64_t cx, int64_t cy) { return (static_cast<uint64_t>(cx) << 32) ^ static_cast<uint32_t>(cy); };
  std::unordered_map<uint64_t, std::vector<uint32_t>> grid;
  std::vector<uint32_t> global;
  for (size_t j = 0; j < n; ++j) {
    if (everywhere[j]) {
      global.push_back(static_cast<uint32_t>(j));
      continue;
    }
    const SepObject& o = *objects[j];
    const int64_t x0 = static_cast<int64_t>(std::floor((o.mx - reach[j]) / cell));
    const int64_t x1 = static_cast<int64_t>(std::floor((o.mx + reach[j]) / cell));
    const int64_t y0 = static_cast<int64_t>(std::floor((o.my - reach[j]) / cell));
    const int64_t y1 = static_cast<int64_t>(std::floor((o.my + reach[j]) / cell));
    for (int64_t cy = y0; cy <= y1; ++cy)
      for (int64_t cx = x0; cx <= x1; ++cx) grid[key(cx, cy)].push_back(static_cast<uint32_t>(j));
  }

  std::vector<uint32_t> candidates;
  for (size_t i = 0; i < n; ++i) {
    if (!survives[i]) continue;
    const SepObject& o1 = *objects[i];
    candidates.clear();
    if (everywhere[i]) {
      for (size_t j = i + 1; j < n; ++j) candidates.push_back(static_cast<uint32_t>(j));
    } else {
      const int64_t x0 = static_cast<int64_t>(std::floor((o1.mx - reach[i]) / cell));
      const int64_t x1 = static_cast<int64_t>(std::floor((o1.mx + reach[i]) / cell));
      const int64_t y0 = static_cast<int64_t>(std::floor((o1.my - reach[i]) / cell));
      const int64_t y1 = static_cast<int64_t>(std::floor((o1.my + reach[i]) / cell));
      for (int64_t cy = y0; cy <= y1; ++cy) {
        for (int64_t cx = x0; cx <= x1; ++cx) {
          const auto found = grid.find(key(cx, cy));
          if (found == grid.end()) continue;
          for (const uint32_t j : found->second)
            if (j > i) candidates.push_back(j);
        }
      }
      for (const uint32_t j : global)
        if (j > i) candidates.push_back(j);
      std::sort(candidates.begin(), candidates.end());
      candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    }
    double ampin, alphain;
    moffat(o1, beta, ampin, alphain);
    for (const uint32_t j : candidates) {
      if (!survives[j]) continue;
      const SepObject& o2 = *objects[j];
      const float dx = static_cast<float>(o1.mx - o2.mx);
      const float dy = static_cast<float>(o1.my - o2.my);
      float rlim = o1.a + o2.a;
      rlim *= rlim;
      if (dx * dx + dy * dy > rlim * kCleanZone * kCleanZone) continue;
      if (o2.fdflux < o1.fdflux) {
        if (eats(o1, ampin, alphain, beta, dx, dy, o2)) survives[j] = 0;
      } else {
        double amp, alpha;
        moffat(o2, beta, amp, alpha);
        if (eats(o2, amp, alpha, beta, dx, dy, o1)) survives[i] = 0;
      }
    }
  }
}

}  // namespace imflow::kernels::deblend_detail
