// One segment's job, end to end (cuda/deblend_tree.hpp has the first two steps), host and device:
//   3. SEP's walk from the top level down over the compressed tree: a chain is ok when nothing
//      under it splits; the kept branches are the ok significant sons of every node with two or
//      more significant sons, collected level by level from the top, nodes in level order (the
//      compressed tree's preorder), sons in scan order;
//   4. each kept branch's pixels (those whose deepest chain lies under it), grouped in raster
//      order by an order-keeping partition, then in SEP's chain order by one more Lutz scan.
#pragma once
#include "cuda/deblend_tree.hpp"

namespace imflow::cuda::deblend_detail {

// 3. On lane 0: the kept branches' order and levels; every chain's kept branch (or -1).
IMFLOW_HOST_DEVICE inline int32_t kept_branches(const TreeArgs& a, SegmentWork& s) {
  int32_t** cn = s.cn;
  const int32_t nc = s.ncnodes;
  for (int32_t u = 0; u < nc; ++u)
    if (cn[kNsig][u] < 2) cn[kFlags][u] |= kOk;
  for (int32_t u = nc - 1; u > 0; --u)
    if (!(cn[kFlags][u] & kOk)) cn[kFlags][cn[kParent][u]] &= ~kOk;
  if (cn[kFlags][0] & kOk) return 0;  // not split
  int32_t sp = 0, npre = 0;
  cn[kStack][sp++] = 0;
  while (sp > 0) {
    const int32_t u = cn[kStack][--sp];
    cn[kPre][npre++] = u;
    const int32_t from = sp;
    for (int32_t c = cn[kFirst][u]; c != -1; c = cn[kSibling][c]) cn[kStack][sp++] = c;
    for (int32_t i = from, j = sp - 1; i < j; ++i, --j) {
      const int32_t swap = cn[kStack][i];
      cn[kStack][i] = cn[kStack][j];
      cn[kStack][j] = swap;
    }
  }
  int32_t* br_level = s.base + s.L.branches + 2 * s.L.cnodes_cap;
  int32_t nb = 0;
  for (int lvl = a.nthresh - 2; lvl >= 0; --lvl) {
    for (int32_t i = 0; i < npre; ++i) {
      const int32_t u = cn[kPre][i];
      if (cn[kNsig][u] < 2 || cn[kEnd][u] != lvl) continue;
      for (int32_t c = cn[kFirst][u]; c != -1; c = cn[kSibling][c]) {
        if ((cn[kFlags][c] & kSig) && (cn[kFlags][c] & kOk)) {
          cn[kBranch][c] = nb;
          const float level = s.level_of(cn[kLevel][c], a.nthresh);
          memcpy(br_level + nb, &level, sizeof level);
          ++nb;
        }
      }
    }
  }
  for (int32_t u = 1; u < nc; ++u)
    if (cn[kBranch][u] < 0) cn[kBranch][u] = cn[kBranch][cn[kParent][u]];
  return nb;
}

// 4. Each kept branch's pixels in chain order (a.branch_pixels) and every pixel's branch.
template <class TeamT>
IMFLOW_HOST_DEVICE bool branch_chains(const TeamT& team, const TreeArgs& a, SegmentWork& s, int32_t nb) {
  int32_t* br_start = s.base + s.L.branches;
  int32_t* br_npix = br_start + s.L.cnodes_cap;
  int32_t* br_fill = br_start + 3 * s.L.cnodes_cap;
  const int32_t* branch_of = s.cn[kBranch];
  if (team.lane == 0)
    for (int32_t b = 0; b < nb; ++b) br_npix[b] = 0;
  team.sync();
  for (int32_t pos = team.lane; pos < s.n; pos += team.size) {
    const int32_t b = branch_of[s.cnode_at[pos]];
    a.pixel_branch[s.P[pos]] = b;
    if (b >= 0) atomic_add(br_npix + b, 1);
  }
  team.sync();
  if (team.lane == 0) {
    int32_t total = 0;
    for (int32_t b = 0; b < nb; ++b) {
      br_start[b] = br_fill[b] = total;
      total += br_npix[b];
    }
  }
  team.sync();
  // Raster order kept within each branch: lanes of one branch take consecutive places.
  for (int32_t base = 0; base < s.n; base += team.size) {
    const int32_t pos = base + team.lane;
    const int32_t b = pos < s.n ? branch_of[s.cnode_at[pos]] : -1;
    const uint32_t group = team.match(b);
    const int32_t at = b >= 0 ? br_fill[b] : 0;
    team.sync();
    if (b >= 0) {
      s.A[at + popcount(group & team.below())] = pos;
      if (lowest_bit(group) == team.lane) br_fill[b] = at + popcount(group);
    }
    team.sync();
  }
  for (int32_t b = 0; b < nb; ++b) {
    const int32_t start = br_start[b], count = br_npix[b];
    int32_t parts = 0, first = -1, got = 0;
    scan_list(team, s, count, ListXY{s.P, s.A + start, s.W, s.x0}, [&](int32_t f, int32_t c) {
      ++parts;
      first = f;
      got = c;
    });
    parts = team.shfl(parts, 0);
    first = team.shfl(first, 0);
    got = team.shfl(got, 0);
    if (parts != 1 || got != count) return fail(team, a, kErrorInternal);
    visit_chain(team, s.piece_len, s.next, first,
                [&](int32_t e, int32_t t) { a.branch_pixels[s.off + start + t] = s.P[s.A[start + e]]; });
  }
  return true;
}

// Segment r's whole job, by the team.
template <class TeamT>
IMFLOW_HOST_DEVICE void tree_job(const TeamT& team, const TreeArgs& a, int32_t r) {
  SegmentWork s;
  s.off = a.seg_off[r];
  s.n = a.seg_off[r + 1] - s.off;
  s.P = a.pixels + s.off;
  const int32_t label = a.seg_label[r];
  s.x0 = a.label_xmin[label];
  s.w = a.label_xmax[label] - s.x0 + 1;
  s.W = a.im.width;
  // Until the chain is known: raster order (the later jobs stay in bounds after an error).
  for (int32_t e = team.lane; e < s.n; e += team.size) {
    a.pixel_branch[s.P[e]] = -1;
    a.chain[s.off + e] = s.P[e];
  }
  if (team.lane == 0) {
    a.seg_branches[r] = 0;
    a.seg_thresh0[r] = 0.0f;
  }
  team.sync();
  if (s.w > s.n) {  // an 8-connected group is never wider than its pixel count
    fail(team, a, kErrorNotConnected);
    return;
  }
  s.L = TreeLayout(s.n, s.w, a.min_pixels);
  s.base = a.arena + a.arena_off[r];
  s.A = s.base + s.L.list;
  s.next = s.base + s.L.next;
  s.node_at = s.base + s.L.node_at;
  s.cnode_at = s.base + s.L.cnode_at;
  s.piece_len = s.base + s.L.piece_len;
  s.run_end = reinterpret_cast<uint32_t*>(s.base + s.L.run_end);
  s.row_end = reinterpret_cast<uint32_t*>(s.base + s.L.row_end);
  s.stacks = LutzStacks::carve(s.base + s.L.stacks, s.w);
  for (int i = 0; i < 2; ++i)
    for (int f = 0; f < TreeLayout::kNodeArrays; ++f)
      s.lv[i][f] = s.base + s.L.levels + (i * TreeLayout::kNodeArrays + f) * s.L.nodes_cap;
  for (int f = 0; f < TreeLayout::kCnodeArrays; ++f) s.cn[f] = s.base + s.L.cnodes + f * s.L.cnodes_cap;

  if (!segment_chain(team, a, s)) return;
  if (team.lane == 0) a.seg_thresh0[r] = s.thresh0;
  if (a.nthresh < 2) return;
  if (!build_levels(team, a, s)) return;
  int32_t nb = 0;
  if (team.lane == 0) nb = kept_branches(a, s);
  team.sync();
  nb = team.shfl(nb, 0);
  if (nb == 0) return;
  if (!branch_chains(team, a, s, nb)) return;
  if (team.lane == 0) a.seg_branches[r] = nb;
}

}  // namespace imflow::cuda::deblend_detail
