// One segment's split, host and device (cuda/deblend.hpp): the segment's pixels in SEP's chain
// order, the tree of branches over the nthresh levels and the kept branches in SEP's order, each
// with its pixels in chain order: what src/kernels/deblend_tree.cpp decides, computed so that it
// fits a working area proportional to the segment:
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

namespace imflow::cuda::deblend_detail {

// Where each array of one segment's working area lies (int32 words from its start).
struct TreeLayout {
  int64_t nodes_cap = 0, cnodes_cap = 0;
  int64_t list = 0, next = 0, node_at = 0, cnode_at = 0, stacks = 0, levels = 0, cnodes = 0, branches = 0, words = 0;
  static constexpr int kNodeArrays = 6, kCnodeArrays = 11, kBranchArrays = 4;
  IMFLOW_HOST_DEVICE TreeLayout(int64_t n, int64_t width, int64_t min_pixels) {
    nodes_cap = n / min_pixels + 1;
    cnodes_cap = 2 * (n / min_pixels) + 2;
    list = 0;
    next = n;
    node_at = 2 * n;
    cnode_at = 3 * n;
    stacks = 4 * n;
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
  float* seg_thresh0 = nullptr;      // out: SEP's mean threshold of the segment
  int32_t* error = nullptr;
  int nthresh = 32;
  double mincont = 0.005;
  int min_pixels = 3;
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

IMFLOW_HOST_DEVICE inline void tree_job(const TreeArgs& a, int32_t r) {
  const int32_t off = a.seg_off[r], n = a.seg_off[r + 1] - off;
  const int32_t* P = a.pixels + off;
  const int32_t label = a.seg_label[r];
  const int32_t x0 = a.label_xmin[label], w = a.label_xmax[label] - x0 + 1;
  const int32_t W = a.im.width;
  a.seg_branches[r] = 0;
  a.seg_thresh0[r] = 0.0f;
  for (int32_t e = 0; e < n; ++e) a.pixel_branch[P[e]] = -1;
  // On an error the chain is left in raster order, so that the later jobs stay in bounds.
  for (int32_t e = 0; e < n; ++e) a.chain[off + e] = P[e];
  if (w > n) {  // an 8-connected group is never wider than its pixel count
    report_error(a.error, kErrorNotConnected);
    return;
  }
  const TreeLayout L(n, w, a.min_pixels);
  int32_t* base = a.arena + a.arena_off[r];
  int32_t* A = base + L.list;
  int32_t* next = base + L.next;
  int32_t* node_at = base + L.node_at;
  int32_t* cnode_at = base + L.cnode_at;
  const LutzStacks stacks = LutzStacks::carve(base + L.stacks, w);

  // 1. The segment's chain, SEP's sums over it.
  int32_t components = 0, first0 = -1, count0 = 0;
  lutz_list(n, ListXY{P, nullptr, W, x0}, w, stacks, next, [&](int32_t first, int32_t npix) {
    ++components;
    first0 = first;
    count0 = npix;
  });
  if (components != 1 || count0 != n) {
    report_error(a.error, kErrorNotConnected);
    return;
  }
  double rv = 0.0, thresh_sum = 0.0;
  float cpeak = -1e+30f;
  int32_t t = 0;
  for (int32_t e = first0; e != -1; e = next[e]) {
    const int32_t p = P[e];
    a.chain[off + t++] = p;
    const float c = a.im.cd[p];
    if (cpeak < c) cpeak = c;
    rv += c;
    thresh_sum += static_cast<double>(a.im.threshold(p));
  }
  const float thresh0 = static_cast<float>(thresh_sum / static_cast<double>(n));
  a.seg_thresh0[r] = thresh0;
  const int xn = a.nthresh;
  if (xn < 2) return;
  const double value0 = static_cast<float>(rv) * a.mincont;
  const double th0 = thresh0, peak = cpeak;
  auto level_of = [&](int k) {
    return peak > 0.0 ? static_cast<float>(th0 * pow(peak / th0, static_cast<double>(k) / xn)) : static_cast<float>(th0);
  };

  // 2. The levels, bottom up. Node arrays (per level, two alternating): parent, first entry,
  // pixels, chain (cnode), sons, flux. Cnode arrays: parent, first child, last child, next
  // sibling, start level, end level, significant sons, flags, branch, preorder, stack.
  int32_t* lv[2][TreeLayout::kNodeArrays];
  for (int s = 0; s < 2; ++s)
    for (int f = 0; f < TreeLayout::kNodeArrays; ++f) lv[s][f] = base + L.levels + (s * TreeLayout::kNodeArrays + f) * L.nodes_cap;
  int32_t* cn[TreeLayout::kCnodeArrays];
  for (int f = 0; f < TreeLayout::kCnodeArrays; ++f) cn[f] = base + L.cnodes + f * L.cnodes_cap;
  int32_t *c_parent = cn[0], *c_first = cn[1], *c_last = cn[2], *c_sibling = cn[3], *c_level = cn[4], *c_end = cn[5],
          *c_nsig = cn[6], *c_flags = cn[7], *c_branch = cn[8], *c_pre = cn[9], *c_stack = cn[10];
  enum : int32_t { kSig = 1, kOk = 2 };
  auto new_cnode = [&](int32_t u, int32_t parent, int32_t level) {
    c_parent[u] = parent;
    c_first[u] = c_last[u] = c_sibling[u] = -1;
    c_level[u] = level;
    c_end[u] = -1;
    c_nsig[u] = 0;
    c_flags[u] = 0;
    c_branch[u] = -1;
    if (parent >= 0) {
      if (c_last[parent] < 0) c_first[parent] = u;
      else c_sibling[c_last[parent]] = u;
      c_last[parent] = u;
    }
  };
  int32_t ncnodes = 1;
  new_cnode(0, -1, 0);
  int32_t nprev = 1;
  {
    int32_t** pv = lv[0];
    pv[0][0] = -1;
    pv[1][0] = -1;
    pv[2][0] = n;
    pv[3][0] = 0;
    pv[4][0] = 0;
    pv[5][0] = 0;
  }
  for (int32_t e = 0; e < n; ++e) {
    A[e] = e;
    node_at[e] = 0;
    cnode_at[e] = 0;
  }
  int32_t m = n;
  for (int k = 1; k < xn && nprev > 0; ++k) {
    const float level = level_of(k);
    int32_t m2 = 0;
    for (int32_t e = 0; e < m; ++e)
      if (a.im.cd[P[A[e]]] > level) A[m2++] = A[e];
    m = m2;
    if (m == 0) break;
    int32_t** pv = lv[(k - 1) & 1];
    int32_t** cv = lv[k & 1];
    int32_t nc = 0;
    lutz_list(m, ListXY{P, A, W, x0}, w, stacks, next, [&](int32_t first, int32_t npix) {
      if (npix < a.min_pixels) return;
      const int32_t parent = node_at[A[first]];
      if (parent < 0 || parent >= nprev || nc >= L.nodes_cap) {
        report_error(a.error, kErrorInternal);
        return;
      }
      double sum = 0.0;
      for (int32_t e = first; e != -1; e = next[e]) {
        sum += a.im.cd[P[A[e]]];
        node_at[A[e]] = nc;
      }
      const float flux = static_cast<float>(sum);
      cv[0][nc] = parent;
      cv[1][nc] = first;
      cv[2][nc] = npix;
      cv[3][nc] = -1;
      cv[4][nc] = 0;
      memcpy(cv[5] + nc, &flux, sizeof flux);
      ++nc;
    });
    for (int32_t i = 0; i < nprev; ++i) pv[4][i] = 0;
    for (int32_t c = 0; c < nc; ++c) ++pv[4][cv[0][c]];
    for (int32_t c = 0; c < nc; ++c) {
      const int32_t p = cv[0][c], pc = pv[3][p];
      if (pv[4][p] == 1) {
        cv[3][c] = pc;  // the parent's only son: the same chain
        continue;
      }
      if (ncnodes >= L.cnodes_cap) {
        report_error(a.error, kErrorInternal);
        return;
      }
      const int32_t u = ncnodes++;
      new_cnode(u, pc, k);
      float flux;
      memcpy(&flux, cv[5] + c, sizeof flux);
      // SEP's significance, float32 as SEP computes it.
      const float above = flux - level * static_cast<float>(cv[2][c]);
      if (above > value0) {
        c_flags[u] |= kSig;
        ++c_nsig[pc];
      }
      c_end[pc] = k - 1;
      cv[3][c] = u;
      for (int32_t e = cv[1][c]; e != -1; e = next[e]) cnode_at[A[e]] = u;
    }
    nprev = nc;
  }

  // 3. SEP's walk: ok = no split in the subtree; the kept branches in SEP's order.
  for (int32_t u = 0; u < ncnodes; ++u)
    if (c_nsig[u] < 2) c_flags[u] |= kOk;
  for (int32_t u = ncnodes - 1; u > 0; --u)
    if (!(c_flags[u] & kOk)) c_flags[c_parent[u]] &= ~kOk;
  if (c_flags[0] & kOk) return;  // not split
  int32_t sp = 0, npre = 0;
  c_stack[sp++] = 0;
  while (sp > 0) {
    const int32_t u = c_stack[--sp];
    c_pre[npre++] = u;
    const int32_t from = sp;
    for (int32_t c = c_first[u]; c != -1; c = c_sibling[c]) c_stack[sp++] = c;
    for (int32_t i = from, j = sp - 1; i < j; ++i, --j) {
      const int32_t swap = c_stack[i];
      c_stack[i] = c_stack[j];
      c_stack[j] = swap;
    }
  }
  int32_t* br_start = base + L.branches;
  int32_t* br_npix = br_start + L.cnodes_cap;
  int32_t* br_level = br_start + 2 * L.cnodes_cap;
  int32_t* br_fill = br_start + 3 * L.cnodes_cap;
  int32_t nb = 0;
  for (int lvl = xn - 2; lvl >= 0; --lvl) {
    for (int32_t i = 0; i < npre; ++i) {
      const int32_t u = c_pre[i];
      if (c_nsig[u] < 2 || c_end[u] != lvl) continue;
      for (int32_t c = c_first[u]; c != -1; c = c_sibling[c]) {
        if ((c_flags[c] & kSig) && (c_flags[c] & kOk)) {
          c_branch[c] = nb;
          const float level = level_of(c_level[c]);
          memcpy(br_level + nb, &level, sizeof level);
          ++nb;
        }
      }
    }
  }
  for (int32_t u = 1; u < ncnodes; ++u)
    if (c_branch[u] < 0) c_branch[u] = c_branch[c_parent[u]];

  // 4. Each kept branch's pixels (raster order, grouped), then in chain order.
  for (int32_t b = 0; b < nb; ++b) br_npix[b] = 0;
  for (int32_t pos = 0; pos < n; ++pos) {
    const int32_t b = c_branch[cnode_at[pos]];
    a.pixel_branch[P[pos]] = b;
    if (b >= 0) ++br_npix[b];
  }
  int32_t total = 0;
  for (int32_t b = 0; b < nb; ++b) {
    br_start[b] = br_fill[b] = total;
    total += br_npix[b];
  }
  for (int32_t pos = 0; pos < n; ++pos) {
    const int32_t b = c_branch[cnode_at[pos]];
    if (b >= 0) A[br_fill[b]++] = pos;
  }
  for (int32_t b = 0; b < nb; ++b) {
    const int32_t start = br_start[b];
    int32_t parts = 0, first = -1, count = 0;
    lutz_list(br_npix[b], ListXY{P, A + start, W, x0}, w, stacks, next, [&](int32_t f, int32_t c) {
      ++parts;
      first = f;
      count = c;
    });
    if (parts != 1 || count != br_npix[b]) {
      report_error(a.error, kErrorInternal);
      return;
    }
    int32_t i = 0;
    for (int32_t e = first; e != -1; e = next[e]) a.branch_pixels[off + start + i++] = P[A[start + e]];
  }
  a.seg_branches[r] = nb;
}

}  // namespace imflow::cuda::deblend_detail
