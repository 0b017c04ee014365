// One segment's split, host and device (cuda/deblend.hpp), by one warp (cuda/deblend_team.hpp):
// the segment's pixels in SEP's chain order, the tree of branches over the nthresh levels and
// the kept branches in SEP's order, each with its pixels in chain order: what
// src/kernels/deblend_tree.cpp decides, computed so that it fits a working area proportional to
// the segment. Steps 1 (the chain) and 2 (the levels) here, 3 and 4 in cuda/deblend_branches.hpp.
//   - a level's branches are the 8-connected groups of the segment's pixels above the level with
//     at least min(minarea, 3) pixels (a group inside a branch of the level below is never smaller
//     than its own groups, so every such group has a parent branch), found by one Lutz scan over
//     the segment's pixels above the level: the same groups, each in the same chain order, as
//     SEP's scan of its parent's box; a branch's parent is the branch below holding its first pixel;
//   - the tree is kept compressed: a node with one son continues its parent's chain, the sons of
//     a node with two or more start new chains ("cnodes", at most 2 n / min_pixels of them). SEP's
//     walk (from the top level down, nodes in level order, sons in scan order) keeps the
//     significant sons of every node with two or more significant sons whose subtrees split no
//     further; level order is the preorder of the compressed tree;
//   - a kept branch's pixels are those whose deepest chain lies under it; their chain order comes
//     from one more Lutz scan of them alone.
#pragma once
#include <cmath>
#include <cstdint>

#include "cuda/deblend_lutz.hpp"
#include "cuda/deblend_sep.hpp"
#include "cuda/deblend_team.hpp"

namespace imflow::cuda::deblend_detail {

// Where each array of one segment's working area lies (int32 words from its start).
struct TreeLayout {
  int64_t nodes_cap = 0, cnodes_cap = 0;
  int64_t list = 0, next = 0, node_at = 0, cnode_at = 0, piece_len = 0, run_end = 0, row_end = 0, stacks = 0,
          levels = 0, cnodes = 0, branches = 0, words = 0;
  static constexpr int kNodeArrays = 6, kCnodeArrays = 11, kBranchArrays = 4;
  TreeLayout() = default;
  IMFLOW_HOST_DEVICE TreeLayout(int64_t n, int64_t width, int64_t min_pixels) {
    nodes_cap = n / min_pixels + 1;
    cnodes_cap = 2 * (n / min_pixels) + 2;
    const int64_t bit_words = n / 32 + 1;
    list = 0;
    next = n;
    node_at = 2 * n;
    cnode_at = 3 * n;
    piece_len = 4 * n;
    run_end = 5 * n;
    row_end = run_end + bit_words;
    stacks = row_end + bit_words;
    levels = stacks + LutzStacks::words(width);
    cnodes = levels + 2 * kNodeArrays * nodes_cap;
    branches = cnodes + kCnodeArrays * cnodes_cap;
    words = branches + kBranchArrays * cnodes_cap;
  }
};

// Errors a job reports (the first one wins): a label that is not one 8-connected component, and
// an internal inconsistency (a bug: tell the maintainers).
enum DeblendError : int32_t { kErrorNone = 0, kErrorLabelRange = 1, kErrorNotConnected = 2, kErrorInternal = 3 };

IMFLOW_HOST_DEVICE inline void report_error(int32_t* error, int32_t code) {
#ifdef __CUDA_ARCH__
  atomicCAS(error, 0, code);
#else
  if (*error == 0) *error = code;
#endif
}

// The list entries of a scan: entry e is the segment pixel P[A[e]] (A null: P[e]).
struct ListXY {
  const int32_t* P;
  const int32_t* A;
  int32_t width, x0;
  IMFLOW_HOST_DEVICE void operator()(int32_t e, int32_t& x, int32_t& y) const {
    const int32_t index = P[A != nullptr ? A[e] : e];
    y = index / width;
    x = index - y * width - x0;
  }
};

struct TreeArgs {
  Pixels im;
  const int32_t* pixels = nullptr;     // the segments' pixels, segment after segment, raster order
  const int32_t* seg_off = nullptr;    // segment r: pixels[seg_off[r], seg_off[r + 1])
  const int32_t* seg_label = nullptr;
  const int32_t* label_xmin = nullptr;  // per label: the columns of its bounding box
  const int32_t* label_xmax = nullptr;
  const long long* arena_off = nullptr;  // segment r's working area: arena + arena_off[r]
  int32_t* arena = nullptr;
  int32_t* chain = nullptr;         // out: chain[seg_off[r] + t], the segment's pixels in chain order
  int32_t* branch_pixels = nullptr;  // out: the kept branches' pixels, each in chain order
  int32_t* pixel_branch = nullptr;   // out, per image pixel of a segment: its kept branch or -1
  int32_t* seg_branches = nullptr;   // out: kept branches (0: not split)
  float* seg_thresh0 = nullptr;      // out: SEP's mean threshold of the segment (lowest_thresh: the minimum)
  int32_t* error = nullptr;
  int nthresh = 32;
  double mincont = 0.005;
  int min_pixels = 3;
  bool lowest_thresh = false;  // clean_style sextractor: SExtractor's lowest pixel threshold (obj->dthresh = minthresh)
};

// Kept branch b of a segment (after tree_job): its pixels branch_pixels[seg_off + start, + npix),
// its level.
struct BranchRecord {
  int32_t start, npix;
  float level;
};
IMFLOW_HOST_DEVICE inline BranchRecord branch_record(const int32_t* area, const TreeLayout& L, int32_t b) {
  const int32_t* br = area + L.branches;
  BranchRecord r;
  r.start = br[b];
  r.npix = br[L.cnodes_cap + b];
  memcpy(&r.level, br + 2 * L.cnodes_cap + b, sizeof(float));
  return r;
}

// One segment's job in progress: its pixels, its working area and what the steps pass on.
struct SegmentWork {
  int32_t off = 0, n = 0, x0 = 0, w = 0, W = 0;
  const int32_t* P = nullptr;
  int32_t* base = nullptr;
  TreeLayout L;
  int32_t *A = nullptr, *next = nullptr, *node_at = nullptr, *cnode_at = nullptr, *piece_len = nullptr;
  uint32_t *run_end = nullptr, *row_end = nullptr;
  LutzStacks stacks{};
  int32_t* lv[2][TreeLayout::kNodeArrays] = {};
  int32_t* cn[TreeLayout::kCnodeArrays] = {};
  float thresh0 = 0.0f;
  double value0 = 0.0, th0 = 0.0, peak = 0.0;
  int32_t ncnodes = 0;
  // SEP stores each level as a float (PIXTYPE).
  IMFLOW_HOST_DEVICE float level_of(int k, int xn) const {
    return peak > 0.0 ? static_cast<float>(th0 * pow(peak / th0, static_cast<double>(k) / xn)) : static_cast<float>(th0);
  }
};

// Cnode arrays: parent, first child, last child, next sibling, start level, end level (of the
// node where it branches), significant sons there, flags, kept branch, preorder, stack.
enum CnodeArray { kParent, kFirst, kLast, kSibling, kLevel, kEnd, kNsig, kFlags, kBranch, kPre, kStack };
enum : int32_t { kSig = 1, kOk = 2 };
// Node arrays (per level, two alternating): parent, first entry, pixels, cnode, sons, flux.
enum NodeArray { kNodeParent, kNodeFirst, kNodeNpix, kNodeCnode, kNodeSons, kNodeFlux };

IMFLOW_HOST_DEVICE inline void new_cnode(SegmentWork& s, int32_t u, int32_t parent, int32_t level) {
  int32_t** cn = s.cn;
  cn[kParent][u] = parent;
  cn[kFirst][u] = cn[kLast][u] = cn[kSibling][u] = -1;
  cn[kLevel][u] = level;
  cn[kEnd][u] = -1;
  cn[kNsig][u] = 0;
  cn[kFlags][u] = 0;
  cn[kBranch][u] = -1;
  if (parent >= 0) {
    if (cn[kLast][parent] < 0) cn[kFirst][parent] = u;
    else cn[kSibling][cn[kLast][parent]] = u;
    cn[kLast][parent] = u;
  }
}

// Lutz over list entries 0..m-1 on lane 0, once the warp has marked their runs' and rows' ends.
template <class TeamT, class Done>
IMFLOW_HOST_DEVICE void scan_list(const TeamT& team, SegmentWork& s, int32_t m, const ListXY& xy, Done&& done) {
  list_bits(team, m, xy, s.run_end, s.row_end);
  if (team.lane == 0) lutz_list(m, xy, s.w, s.stacks, s.next, s.piece_len, s.run_end, s.row_end, done);
  team.sync();
}

template <class TeamT>
IMFLOW_HOST_DEVICE bool fail(const TeamT& team, const TreeArgs& a, int32_t code) {
  if (team.lane == 0) report_error(a.error, code);
  return false;
}

// 1. The segment's chain (into a.chain) and SEP's sums over it.
template <class TeamT>
IMFLOW_HOST_DEVICE bool segment_chain(const TeamT& team, const TreeArgs& a, SegmentWork& s) {
  int32_t components = 0, first = -1, count = 0;
  scan_list(team, s, s.n, ListXY{s.P, nullptr, s.W, s.x0}, [&](int32_t f, int32_t c) {
    ++components;
    first = f;
    count = c;
  });
  components = team.shfl(components, 0);
  first = team.shfl(first, 0);
  count = team.shfl(count, 0);
  if (components != 1 || count != s.n) return fail(team, a, kErrorNotConnected);
  double rv = 0.0, thresh_sum = 0.0;
  float cpeak = -1e+30f, thresh_min = 1e+30f;
  walk_chain(
      team, s.piece_len, s.next, first,
      [&](int32_t e, float& v, float& t) {
        const int32_t p = s.P[e];
        v = a.im.cd[p];
        t = a.im.threshold(p);
      },
      [&](int32_t e, int32_t t) { a.chain[s.off + t] = s.P[e]; },
      [&](float v, float t) {
        if (cpeak < v) cpeak = v;
        rv += v;
        thresh_sum += static_cast<double>(t);
        if (t < thresh_min) thresh_min = t;
      });
  s.thresh0 = a.lowest_thresh ? thresh_min : static_cast<float>(thresh_sum / static_cast<double>(s.n));
  s.value0 = static_cast<float>(rv) * a.mincont;
  s.th0 = s.thresh0;
  s.peak = cpeak;
  return true;
}

// 2. The levels, bottom up: each level's branches (their fluxes in chain order) and the chains
// of the compressed tree.
template <class TeamT>
IMFLOW_HOST_DEVICE bool build_levels(const TeamT& team, const TreeArgs& a, SegmentWork& s) {
  const int xn = a.nthresh;
  int32_t** cn = s.cn;
  for (int32_t e = team.lane; e < s.n; e += team.size) {
    s.A[e] = e;
    s.node_at[e] = 0;
    s.cnode_at[e] = 0;
  }
  if (team.lane == 0) {
    new_cnode(s, 0, -1, 0);
    int32_t** pv = s.lv[0];
    pv[kNodeParent][0] = -1;
    pv[kNodeFirst][0] = -1;
    pv[kNodeNpix][0] = s.n;
    pv[kNodeCnode][0] = 0;
    pv[kNodeSons][0] = 0;
    pv[kNodeFlux][0] = 0;
  }
  team.sync();
  s.ncnodes = 1;
  int32_t m = s.n, nprev = 1;
  for (int k = 1; k < xn && nprev > 0; ++k) {
    const float level = s.level_of(k, xn);
    // The pixels above the level, in place and in order (each lane's read of A precedes the
    // ballot, which needs it, and so every write after it).
    int32_t kept = 0;
    for (int32_t base = 0; base < m; base += team.size) {
      const int32_t e = base + team.lane;
      int32_t pos = 0;
      bool keep = false;
      if (e < m) {
        pos = s.A[e];
        keep = a.im.cd[s.P[pos]] > level;
      }
      const uint32_t mask = team.ballot(keep);
      if (keep) s.A[kept + popcount(mask & team.below())] = pos;
      kept += popcount(mask);
    }
    team.sync();
    m = kept;
    if (m == 0) break;
    int32_t** pv = s.lv[(k - 1) & 1];
    int32_t** cv = s.lv[k & 1];
    int32_t nc = 0, overflow = 0;
    scan_list(team, s, m, ListXY{s.P, s.A, s.W, s.x0}, [&](int32_t first, int32_t npix) {
      if (npix < a.min_pixels) return;
      if (nc >= s.L.nodes_cap) {
        overflow = 1;
        return;
      }
      cv[kNodeFirst][nc] = first;
      cv[kNodeNpix][nc] = npix;
      ++nc;
    });
    nc = team.shfl(nc, 0);
    if (team.shfl(overflow, 0) != 0) return fail(team, a, kErrorInternal);
    // Each branch's parent (the branch below holding its first pixel) and flux.
    for (int32_t c = 0; c < nc; ++c) {
      const int32_t first = cv[kNodeFirst][c];
      const int32_t parent = s.node_at[s.A[first]];
      team.sync();  // every lane has read it before node_at changes
      if (parent < 0 || parent >= nprev) return fail(team, a, kErrorInternal);
      double sum = 0.0;
      walk_chain(
          team, s.piece_len, s.next, first, [&](int32_t e, float& v, float&) { v = a.im.cd[s.P[s.A[e]]]; },
          [&](int32_t e, int32_t) { s.node_at[s.A[e]] = c; }, [&](float v, float) { sum += v; });
      if (team.lane == 0) {
        const float flux = static_cast<float>(sum);
        cv[kNodeParent][c] = parent;
        cv[kNodeCnode][c] = -1;
        cv[kNodeSons][c] = 0;
        memcpy(cv[kNodeFlux] + c, &flux, sizeof flux);
      }
    }
    team.sync();
    // The chains: an only son continues its parent's, the sons of a node with two or more start
    // new ones (with SEP's significance, float32 as SEP computes it).
    int32_t failed = 0;
    if (team.lane == 0) {
      for (int32_t i = 0; i < nprev; ++i) pv[kNodeSons][i] = 0;
      for (int32_t c = 0; c < nc; ++c) ++pv[kNodeSons][cv[kNodeParent][c]];
      for (int32_t c = 0; c < nc && !failed; ++c) {
        const int32_t p = cv[kNodeParent][c], pc = pv[kNodeCnode][p];
        if (pv[kNodeSons][p] == 1) {
          cv[kNodeCnode][c] = pc;
          continue;
        }
        if (s.ncnodes >= s.L.cnodes_cap) {
          failed = 1;
          break;
        }
        const int32_t u = s.ncnodes++;
        new_cnode(s, u, pc, k);
        float flux;
        memcpy(&flux, cv[kNodeFlux] + c, sizeof flux);
        const float above = flux - level * static_cast<float>(cv[kNodeNpix][c]);
        if (above > s.value0) {
          cn[kFlags][u] |= kSig;
          ++cn[kNsig][pc];
        }
        cn[kEnd][pc] = k - 1;
        cv[kNodeCnode][c] = u;
      }
    }
    team.sync();
    if (team.shfl(failed, 0) != 0) return fail(team, a, kErrorInternal);
    s.ncnodes = team.shfl(s.ncnodes, 0);
    for (int32_t c = 0; c < nc; ++c) {
      if (pv[kNodeSons][cv[kNodeParent][c]] == 1) continue;
      const int32_t u = cv[kNodeCnode][c];
      visit_chain(team, s.piece_len, s.next, cv[kNodeFirst][c], [&](int32_t e, int32_t) { s.cnode_at[s.A[e]] = u; });
    }
    nprev = nc;
  }
  return true;
}

}  // namespace imflow::cuda::deblend_detail
