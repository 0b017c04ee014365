// The split of one segment, as SEP's deblend() decides it: the tree of branches over nthresh
// levels spaced exponentially between the segment's threshold and its peak (each branch an
// 8-connected group of its parent's pixels above the level, found by SEP's Lutz scan over the
// parent's bounding box, with at least min(minarea, 3) pixels), then the walk from the top level
// down that keeps the significant branches of every node with two or more of them.
#include <algorithm>
#include <cmath>

#include "deblend_internal.hpp"

namespace imflow::kernels::deblend_detail {

namespace {
constexpr int kMaxDebArea = 3;  // SEP's MAXDEBAREA

struct Node {
  std::vector<int32_t> pixels;  // indices into the segment, chain order
  SepObject object;             // preanalyse, thresh = the node's level
  std::vector<int32_t> sons;    // indices into the next level
  uint8_t ok = 1;
};
}  // namespace

void split_segment(const SegmentPixels& s, const DeblendParams& params, LutzScratch& lutz, SegmentSplit& split) {
  split.branches.clear();
  split.levels.clear();
  const int xn = params.nthresh;
  if (xn < 2) return;
  std::vector<std::vector<Node>> levels(static_cast<size_t>(xn));
  {
    Node root;
    root.pixels.resize(static_cast<size_t>(s.size()));
    for (int32_t i = 0; i < static_cast<int32_t>(s.size()); ++i) root.pixels[static_cast<size_t>(i)] = i;
    sep_preanalyse(s, root.pixels.data(), s.size(), root.object);
    root.object.thresh = s.thresh0;
    levels[0].push_back(std::move(root));
  }
  const double value0 = levels[0][0].object.fdflux * params.mincont;
  const double thresh0 = s.thresh0;
  const double peak = levels[0][0].object.fdpeak;
  const int64_t min_pixels = std::min(params.minarea, kMaxDebArea);

  std::vector<uint8_t> mask;
  std::vector<int32_t> stamp(static_cast<size_t>(s.size()), -1);  // the parent a pixel was last seen in
  Components components;
  int32_t stamp_id = 0;
  for (int k = 1; k < xn; ++k) {
    // SEP stores the level as a float (PIXTYPE).
    const float level = peak > 0.0 ? static_cast<float>(thresh0 * std::pow(peak / thresh0, static_cast<double>(k) / xn))
                                   : static_cast<float>(thresh0);
    std::vector<Node>& parents = levels[static_cast<size_t>(k - 1)];
    std::vector<Node>& sons = levels[static_cast<size_t>(k)];
    for (Node& parent : parents) {
      const SepObject& po = parent.object;
      if (!(po.fdpeak > level)) continue;  // no pixel above the level: no branch
      ++stamp_id;
      for (const int32_t p : parent.pixels) stamp[static_cast<size_t>(p)] = stamp_id;
      const int64_t bw = po.xmax - po.xmin + 1, bh = po.ymax - po.ymin + 1;
      mask.assign(static_cast<size_t>(bw * bh), 0);
      // SEP scans every pixel of the segment inside the parent's box, then keeps the groups
      // whose first pixel is the parent's ("belong").
      for (int64_t y = 0; y < bh; ++y) {
        const int32_t* sub = s.submap.data() + (po.ymin + y) * s.width + po.xmin;
        uint8_t* m = mask.data() + y * bw;
        for (int64_t x = 0; x < bw; ++x) m[x] = sub[x] >= 0 && s.cd[static_cast<size_t>(sub[x])] > level;
      }
      lutz_scan(mask.data(), bw, bh, min_pixels, lutz, components);
      for (size_t c = 0; c < components.size(); ++c) {
        const int64_t begin = components.offsets[c], end = components.offsets[c + 1];
        auto to_segment = [&](int64_t w) {
          return s.submap[static_cast<size_t>((po.ymin + w / bw) * s.width + po.xmin + w % bw)];
        };
        if (stamp[static_cast<size_t>(to_segment(components.pixels[static_cast<size_t>(begin)]))] != stamp_id) continue;
        Node son;
        son.pixels.resize(static_cast<size_t>(end - begin));
        for (int64_t i = begin; i < end; ++i)
          son.pixels[static_cast<size_t>(i - begin)] = to_segment(components.pixels[static_cast<size_t>(i)]);
        sep_preanalyse(s, son.pixels.data(), end - begin, son.object);
        son.object.thresh = level;
        parent.sons.push_back(static_cast<int32_t>(sons.size()));
        sons.push_back(std::move(son));
      }
    }
  }

  // Cut the branches, top level down (float32 arithmetic of SEP's test).
  auto significant = [&](const SepObject& o) {
    const float above = o.fdflux - o.thresh * static_cast<float>(o.fdnpix);
    return above > value0;
  };
  for (int k = xn - 2; k >= 0; --k) {
    std::vector<Node>& nodes = levels[static_cast<size_t>(k)];
    std::vector<Node>& sons = levels[static_cast<size_t>(k + 1)];
    for (Node& node : nodes) {
      int m = 0;
      for (const int32_t j : node.sons) {
        if (significant(sons[static_cast<size_t>(j)].object)) ++m;
        node.ok &= sons[static_cast<size_t>(j)].ok;
      }
      if (m > 1) {
        for (const int32_t j : node.sons) {
          Node& son = sons[static_cast<size_t>(j)];
          if (son.ok && significant(son.object)) {
            split.levels.push_back(son.object.thresh);
            split.branches.push_back(std::move(son.pixels));
          }
        }
        node.ok = 0;
      }
    }
    levels[static_cast<size_t>(k + 1)].clear();  // no longer needed below
  }
  if (levels[0][0].ok) {
    split.branches.clear();
    split.levels.clear();
  }
}

}  // namespace imflow::kernels::deblend_detail
