// CLEAN as SEP's clean() does it, once over the final object list in catalog order: for each
// surviving object i and each later surviving j within 10 (a_i + a_j), the brighter (by flux) as
// a Moffat profile of beta = clean_param removes the fainter when the profile at the fainter's
// centre exceeds its mthresh. A grid of cells finds the close pairs (SEP compares every pair;
// clean_candidates, shared with SExtractor's CLEAN); they are visited in SEP's order, so the
// result is SEP's.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "deblend_internal.hpp"

namespace imflow::kernels::deblend_detail {

void clean_candidates(const std::vector<const SepObject*>& objects, std::vector<int64_t>& offsets,
                      std::vector<uint32_t>& later) {
  const size_t n = objects.size();
  offsets.assign(n + 1, 0);
  later.clear();
  if (n < 2) return;
  // Each object's reach: a pair is compared when dx^2 + dy^2 <= 100 (a_i + a_j)^2, so their
  // squares of half-side 10 a + 1 overlap.
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

  std::vector<std::vector<uint32_t>> found(n);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 256), [&](const tbb::blocked_range<size_t>& range) {
    for (size_t i = range.begin(); i != range.end(); ++i) {
      std::vector<uint32_t>& candidates = found[i];
      if (everywhere[i]) {
        for (size_t j = i + 1; j < n; ++j) candidates.push_back(static_cast<uint32_t>(j));
        continue;
      }
      const SepObject& o1 = *objects[i];
      const int64_t x0 = static_cast<int64_t>(std::floor((o1.mx - reach[i]) / cell));
      const int64_t x1 = static_cast<int64_t>(std::floor((o1.mx + reach[i]) / cell));
      const int64_t y0 = static_cast<int64_t>(std::floor((o1.my - reach[i]) / cell));
      const int64_t y1 = static_cast<int64_t>(std::floor((o1.my + reach[i]) / cell));
      for (int64_t cy = y0; cy <= y1; ++cy) {
        for (int64_t cx = x0; cx <= x1; ++cx) {
          const auto cell_items = grid.find(key(cx, cy));
          if (cell_items == grid.end()) continue;
          for (const uint32_t j : cell_items->second)
            if (j > i) candidates.push_back(j);
        }
      }
      for (const uint32_t j : global)
        if (j > i) candidates.push_back(j);
      std::sort(candidates.begin(), candidates.end());
      candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    }
  });
  for (size_t i = 0; i < n; ++i) offsets[i + 1] = offsets[i] + static_cast<int64_t>(found[i].size());
  later.reserve(static_cast<size_t>(offsets[n]));
  for (auto& f : found) later.insert(later.end(), f.begin(), f.end());
}

void sep_clean(const std::vector<const SepObject*>& objects, double clean_param, std::vector<uint8_t>& survives) {
  const size_t n = objects.size();
  survives.assign(n, 1);
  if (n < 2) return;
  const double beta = clean_param;
  std::vector<int64_t> offsets;
  std::vector<uint32_t> later;
  clean_candidates(objects, offsets, later);
  for (size_t i = 0; i < n; ++i) {
    if (!survives[i]) continue;
    const SepObject& o1 = *objects[i];
    double ampin, alphain;
    clean_moffat(o1, beta, o1.fdflux, o1.fdnpix, ampin, alphain);
    for (int64_t k = offsets[i]; k < offsets[i + 1]; ++k) {
      const uint32_t j = later[static_cast<size_t>(k)];
      if (!survives[j]) continue;
      const SepObject& o2 = *objects[j];
      const float dx = static_cast<float>(o1.mx - o2.mx);
      const float dy = static_cast<float>(o1.my - o2.my);
      float rlim = o1.a + o2.a;
      rlim *= rlim;
      if (dx * dx + dy * dy > rlim * kCleanZone * kCleanZone) continue;
      if (o2.fdflux < o1.fdflux) {
        if (clean_eats(o1, ampin, alphain, beta, dx, dy, o2)) survives[j] = 0;
      } else {
        double amp, alpha;
        clean_moffat(o2, beta, o2.fdflux, o2.fdnpix, amp, alpha);
        if (clean_eats(o2, amp, alpha, beta, dx, dy, o1)) survives[i] = 0;
      }
    }
  }
}

}  // namespace imflow::kernels::deblend_detail
