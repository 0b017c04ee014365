// The split of one segment, as SEP's deblend() decides it: the tree of branches over nthresh
// levels spaced exponentially between the segment's threshold and its peak (each branch an
// 8-connected group of its parent's pixels above the level, found by SEP's Lutz scan over the
// parent's bounding box, with at least min(minarea, 3) pixels), then the walk from the top level
// down that keeps the significant branches of every node with two or more of them.
#include <algorithm>
#include <cmath>
#include <limits>

#include "deblend_internal.hpp"

namespace imflow::kernels::deblend_detail {

namespace {
constexpr int kMaxDebArea = 3;  // SEP's MAXDEBAREA
}  // namespace

void split_segment(const SegmentPixels& s, const DeblendParams& params, SegmentScratch& scratch, SegmentSplit& split) {
  split.branches.clear();
  split.levels.clear();
  const int xn = params.nthresh;
  if (xn < 2) return;
  if (scratch.levels.size() < static_cast<size_t>(xn)) scratch.levels.resize(static_cast<size_t>(xn));
  std::vector<TreeLevel>& levels = scratch.levels;
  for (int k = 0; k < xn; ++k) {
    levels[static_cast<size_t>(k)].nodes.clear();
    levels[static_cast<size_t>(k)].pool.clear();
  }
  {
    TreeLevel& top = levels[0];
    top.pool.resize(static_cast<size_t>(s.size()));
    for (int32_t i = 0; i < static_cast<int32_t>(s.size()); ++i) top.pool[static_cast<size_t>(i)] = i;
    TreeNode root;
    root.pixels = s.size();
    sep_preanalyse(s, top.pool.data(), s.size(), root.object);
    root.object.thresh = s.thresh0;
    top.nodes.push_back(root);
  }
  const double value0 = levels[0].nodes[0].object.fdflux * params.mincont;
  const double thresh0 = s.thresh0;
  const double peak = levels[0].nodes[0].object.fdpeak;
  const int64_t min_pixels = std::min(params.minarea, kMaxDebArea);

  // The box's values once, so that each level's mask is one comparison per pixel of the parent's box.
  std::vector<float>& box_values = scratch.box_values;
  box_values.resize(s.submap.size());
  for (size_t i = 0; i < box_values.size(); ++i) {
    const int32_t p = s.submap[i];
    box_values[i] = p >= 0 ? s.cd[static_cast<size_t>(p)] : -std::numeric_limits<float>::infinity();
  }
  std::vector<uint8_t>& mask = scratch.mask;
  std::vector<int32_t>& stamp = scratch.stamp;
  stamp.assign(static_cast<size_t>(s.size()), -1);
  Components& components = scratch.components;
  int32_t stamp_id = 0;
  for (int k = 1; k < xn; ++k) {
    // SEP stores the level as a float (PIXTYPE).
    const float level = peak > 0.0 ? static_cast<float>(thresh0 * std::pow(peak / thresh0, static_cast<double>(k) / xn))
                                   : static_cast<float>(thresh0);
    TreeLevel& parents = levels[static_cast<size_t>(k - 1)];
    TreeLevel& sons = levels[static_cast<size_t>(k)];
    for (TreeNode& parent : parents.nodes) {
      parent.first_son = static_cast<int64_t>(sons.nodes.size());
      const SepObject& po = parent.object;
      if (!(po.fdpeak > level)) continue;  // no pixel above the level: no branch
      ++stamp_id;
      const int32_t* parent_pixels = parents.pixels_of(parent);
      for (int64_t i = 0; i < parent.pixels; ++i) stamp[static_cast<size_t>(parent_pixels[i])] = stamp_id;
      const int64_t bw = po.xmax - po.xmin + 1, bh = po.ymax - po.ymin + 1;
      mask.resize(static_cast<size_t>(bw * bh));  // every cell written below
      // SEP scans every pixel of the segment inside the parent's box, then keeps the groups
      // whose first pixel is the parent's ("belong").
      for (int64_t y = 0; y < bh; ++y) {
        const float* values = box_values.data() + (po.ymin + y) * s.width + po.xmin;
        uint8_t* m = mask.data() + y * bw;
        for (int64_t x = 0; x < bw; ++x) m[x] = values[x] > level;
      }
      lutz_scan(mask.data(), bw, bh, min_pixels, scratch.lutz, components);
      for (size_t c = 0; c < components.size(); ++c) {
        const int64_t begin = components.offsets[c], end = components.offsets[c + 1];
        auto to_segment = [&](int64_t w) {
          return s.submap[static_cast<size_t>((po.ymin + w / bw) * s.width + po.xmin + w % bw)];
        };
        if (stamp[static_cast<size_t>(to_segment(components.pixels[static_cast<size_t>(begin)]))] != stamp_id) continue;
        TreeNode son;
        son.first_pixel = static_cast<int64_t>(sons.pool.size());
        son.pixels = end - begin;
        for (int64_t i = begin; i < end; ++i) sons.pool.push_back(to_segment(components.pixels[static_cast<size_t>(i)]));
        sep_preanalyse(s, sons.pixels_of(son), son.pixels, son.object);
        son.object.thresh = level;
        sons.nodes.push_back(son);
        ++parent.sons;
      }
    }
  }

  // Cut the branches, top level down (float32 arithmetic of SEP's test).
  auto significant = [&](const SepObject& o) {
    const float above = o.fdflux - o.thresh * static_cast<float>(o.fdnpix);
    return above > value0;
  };
  for (int k = xn - 2; k >= 0; --k) {
    TreeLevel& nodes = levels[static_cast<size_t>(k)];
    const TreeLevel& sons = levels[static_cast<size_t>(k + 1)];
    for (TreeNode& node : nodes.nodes) {
      const TreeNode* first = sons.nodes.data() + node.first_son;
      int m = 0;
      for (const TreeNode* son = first; son != first + node.sons; ++son) {
        if (significant(son->object)) ++m;
        node.ok &= son->ok;
      }
      if (m > 1) {
        for (const TreeNode* son = first; son != first + node.sons; ++son) {
          if (son->ok && significant(son->object)) {
            split.levels.push_back(son->object.thresh);
            split.branches.emplace_back(sons.pixels_of(*son), sons.pixels_of(*son) + son->pixels);
          }
        }
        node.ok = 0;
      }
    }
  }
  if (levels[0].nodes[0].ok) {
    split.branches.clear();
    split.levels.clear();
  }
}

}  // namespace imflow::kernels::deblend_detail
