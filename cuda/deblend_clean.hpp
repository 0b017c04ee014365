// CLEAN and the outputs of the GPU deblending (cuda/deblend.hpp), host and device jobs.
// SEP's clean() visits the objects in catalog order; each surviving object i compares itself
// with every later surviving j within 10 (a_i + a_j) and the brighter may remove the fainter.
// What happens to a pair does not depend on the order (clean_outcome), only whether both still
// survive when SEP reaches it, so:
//   - one thread per object i finds the pairs (i, j > i) with an outcome: objects of reach
//     10 a + 1 <= 64 px sit in 32-px cells and i looks at the cells around it; the others (and
//     non-finite ones, which SEP's test never skips) are compared with every object, by a warp;
//   - a count pass, a scan and a fill pass store each i's pairs (what does not fit the edge
//     buffer is found again by the resolution, so no limit: the buffer grows for the next call);
//   - one thread walks the objects in order, as SEP does, over the stored pairs: O(objects + pairs).
// Then the survivors are numbered in order and painted, and their records written.
// clean_style sextractor stores instead each i's earlier j within SExtractor's zone, and one
// thread walks SExtractor's CLEAN list (cuda/deblend_clean_sextractor.hpp).
#pragma once
#include <cmath>
#include <cstdint>

#include "cuda/deblend.hpp"
#include "cuda/deblend_jobs.hpp"

namespace imflow::cuda::deblend_detail {

constexpr double kCleanCell = 32.0;
constexpr double kCleanSmallReach = 64.0;

// The counts of one call, written by summary_job into mapped pinned memory.
struct DeblendSummary {
  int32_t objects;         // before CLEAN
  int32_t survivors;       // after CLEAN: labels 1..survivors
  int32_t segments, segments_split, error, valid;
  long long draws, edges;  // rand_r calls; CLEAN's pairs with an outcome
};

// SExtractor's CLEAN (clean_style sextractor, cuda/deblend_clean_sextractor.hpp): per object its
// running sums after merges, and the CLEAN list's entries.
struct SextractorState {
  float fdflux;
  long long fdnpix;
  int32_t ymin, ymax;
  int32_t eaten_by;  // the object it was merged into, -1: none
  int32_t position;  // its place in the list, -1: not in it
  int32_t merged, truncated;  // a survivor: others merged into it, one of them touches the edge
};
struct SextractorEntry {
  int32_t index;
  long long ycmin, ycmax;
};

struct CleanPlan {
  int32_t ncx = 1, ncy = 1;                  // the cell grid
  int32_t* obj_cell = nullptr;               // per object: its cell, or -1 (compared with everyone)
  int32_t *cell_count = nullptr, *cell_off = nullptr, *cell_fill = nullptr, *cell_items = nullptr;
  uint8_t* big_flag = nullptr;               // per object (selection flags)
  int32_t* big_list = nullptr;               // those objects in order (counters->big of them)
  int32_t *edge_count = nullptr, *edge_off = nullptr;  // per object, objects + 1 entries
  int32_t* edges = nullptr;                  // (j << 1) | (j removes i)
  long long edge_capacity = 0;
  int32_t *survives = nullptr, *new_id = nullptr;  // objects + 1 entries (scan)
  // clean_style sextractor (merging): per object its state and survivor, and the list
  bool merging = false;
  SextractorState* state = nullptr;
  SextractorEntry* list = nullptr;
  int32_t* owner = nullptr;
  // Min-heaps of the list's entries (stale once an entry left the list): by ycmin for the
  // scan's releases, by ycmax for the stack's evictions; and room for the positions to remove.
  SextractorEntry *release_heap = nullptr, *evict_heap = nullptr;
  int32_t* positions = nullptr;
};

IMFLOW_HOST_DEVICE inline double clean_reach(const CleanObject& o) { return 10.0 * o.a + 1.0; }
IMFLOW_HOST_DEVICE inline bool finite(double v) { return v - v == 0.0; }

IMFLOW_HOST_DEVICE inline int32_t cell_coordinate(double v, int32_t cells) {
  const double c = floor(v / kCleanCell);
  if (!(c > 0.0)) return 0;
  return c >= cells - 1 ? cells - 1 : static_cast<int32_t>(c);
}

IMFLOW_HOST_DEVICE inline void clean_cell_job(const DeblendPlan& p, const CleanPlan& c, int32_t o) {
  const CleanObject& obj = p.objects[o];
  const double reach = clean_reach(obj);
  const bool small = finite(reach) && finite(obj.mx) && finite(obj.my) && reach <= kCleanSmallReach;
  c.big_flag[o] = small ? 0 : 1;
  if (!small) {
    c.obj_cell[o] = -1;
    return;
  }
  const int32_t cell = cell_coordinate(obj.my, c.ncy) * c.ncx + cell_coordinate(obj.mx, c.ncx);
  c.obj_cell[o] = cell;
  atomic_add(c.cell_count + cell, 1);
}

IMFLOW_HOST_DEVICE inline void clean_fill_job(const DeblendPlan&, const CleanPlan& c, int32_t o) {
  const int32_t cell = c.obj_cell[o];
  if (cell >= 0) c.cell_items[c.cell_off[cell] + atomic_add(c.cell_fill + cell, 1)] = o;
}

// Calls visit(j) for every j > i (kEarlier: j < i) whose pair with i may lie within CLEAN's zone.
template <bool kEarlier, class F>
IMFLOW_HOST_DEVICE void clean_neighbours(const DeblendPlan& p, const CleanPlan& c, int32_t i, F&& visit) {
  const int32_t n = p.counters->objects;
  const CleanObject& oi = p.objects[i];
  if (c.obj_cell[i] < 0) {
    for (int32_t j = kEarlier ? 0 : i + 1; j < (kEarlier ? i : n); ++j) visit(j);
    return;
  }
  // Objects compared with everyone: the part of big_list after i (kEarlier: before it).
  const int32_t nbig = p.counters->big;
  int32_t lo = 0, hi = nbig;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (c.big_list[mid] <= i) lo = mid + 1;
    else hi = mid;
  }
  for (int32_t k = kEarlier ? 0 : lo; k < (kEarlier ? lo : nbig); ++k)
    if (c.big_list[k] != i) visit(c.big_list[k]);
  // Small ones: a pair within reach_i + reach_j <= reach_i + 64 px lies at most
  // floor(that / cell) + 1 cells apart (clamping the cells only brings them closer).
  const int32_t range = static_cast<int32_t>(floor((clean_reach(oi) + kCleanSmallReach) / kCleanCell)) + 1;
  const int32_t cx = c.obj_cell[i] % c.ncx, cy = c.obj_cell[i] / c.ncx;
  const int32_t x0 = cx - range < 0 ? 0 : cx - range, x1 = cx + range >= c.ncx ? c.ncx - 1 : cx + range;
  const int32_t y0 = cy - range < 0 ? 0 : cy - range, y1 = cy + range >= c.ncy ? c.ncy - 1 : cy + range;
  for (int32_t y = y0; y <= y1; ++y) {
    for (int32_t x = x0; x <= x1; ++x) {
      const int32_t cell = y * c.ncx + x;
      for (int32_t k = c.cell_off[cell], end = c.cell_off[cell + 1]; k < end; ++k) {
        const int32_t j = c.cell_items[k];
        if (kEarlier ? j < i : j > i) visit(j);
      }
    }
  }
}

// Calls f(j, outcome) for every j > i whose pair with i has an outcome (clean_outcome != 0).
template <class F>
IMFLOW_HOST_DEVICE void clean_pairs(const DeblendPlan& p, const CleanPlan& c, int32_t i, F&& f) {
  const CleanObject& oi = p.objects[i];
  clean_neighbours<false>(p, c, i, [&](int32_t j) {
    const int outcome = clean_outcome(oi, p.objects[j], p.beta);
    if (outcome != 0) f(j, outcome);
  });
}

// SExtractor's zone test of newcomer `in` against the listed object o (clean.c: strictly inside).
IMFLOW_HOST_DEVICE inline bool sextractor_zone(const CleanObject& in, const CleanObject& o, float& dx, float& dy) {
  constexpr double kCleanZone = 10.0;
  dx = static_cast<float>(in.mx - o.mx);
  dy = static_cast<float>(in.my - o.my);
  float rlim = in.a + o.a;
  rlim *= rlim;
  return dx * dx + dy * dy < rlim * kCleanZone * kCleanZone;
}

// Calls f(j) for every earlier j within SExtractor's zone of i (the candidates of newcomer i).
template <class F>
IMFLOW_HOST_DEVICE void sextractor_pairs(const DeblendPlan& p, const CleanPlan& c, int32_t i, F&& f) {
  const CleanObject& oi = p.objects[i];
  clean_neighbours<true>(p, c, i, [&](int32_t j) {
    float dx, dy;
    if (sextractor_zone(oi, p.objects[j], dx, dy)) f(j);
  });
}

// An object of the cell grid: its pairs by one thread. Those compared with every object: by
// clean_big_job.
IMFLOW_HOST_DEVICE inline void clean_count_job(const DeblendPlan& p, const CleanPlan& c, int32_t i) {
  if (c.obj_cell[i] < 0) return;
  int32_t count = 0;
  if (c.merging) sextractor_pairs(p, c, i, [&](int32_t) { ++count; });
  else clean_pairs(p, c, i, [&](int32_t, int) { ++count; });
  c.edge_count[i] = count;
}

// SEP: (j << 1) | (j removes i) for j > i; SExtractor: the earlier j within the zone.
IMFLOW_HOST_DEVICE inline void clean_store_job(const DeblendPlan& p, const CleanPlan& c, int32_t i) {
  // clean_big_job's; or found again by clean_resolve
  if (c.obj_cell[i] < 0 || c.edge_off[i + 1] > c.edge_capacity) return;
  int32_t k = c.edge_off[i];
  if (c.merging) sextractor_pairs(p, c, i, [&](int32_t j) { c.edges[k++] = j; });
  else clean_pairs(p, c, i, [&](int32_t j, int outcome) { c.edges[k++] = (j << 1) | (outcome == 2 ? 1 : 0); });
}

// The k-th object compared with every object (big_list[k]): its pairs counted (store false) or
// stored in the same order as clean_store_job, by a team testing team.size objects at a time.
template <class TeamT>
IMFLOW_HOST_DEVICE void clean_big_job(const TeamT& team, const DeblendPlan& p, const CleanPlan& c, int32_t k,
                                      bool store) {
  const int32_t i = c.big_list[k];
  if (store && c.edge_off[i + 1] > c.edge_capacity) return;  // found again by clean_resolve
  const CleanObject& oi = p.objects[i];
  const int32_t first = c.merging ? 0 : i + 1, end = c.merging ? i : p.counters->objects;
  int32_t at = store ? c.edge_off[i] : 0;
  for (int32_t base = first; base < end; base += team.size) {
    const int32_t j = base + team.lane;
    int32_t edge = -1;
    if (j < end) {
      float dx, dy;
      if (c.merging) edge = sextractor_zone(oi, p.objects[j], dx, dy) ? j : -1;
      else if (const int outcome = clean_outcome(oi, p.objects[j], p.beta); outcome != 0)
        edge = (j << 1) | (outcome == 2 ? 1 : 0);
    }
    const uint32_t found = team.ballot(edge >= 0);
    if (store && edge >= 0) c.edges[at + popcount(found & team.below())] = edge;
    at += popcount(found);
  }
  if (!store && team.lane == 0) c.edge_count[i] = at;
}

// SEP's loop over the objects in order (one thread).
IMFLOW_HOST_DEVICE inline void clean_resolve(const DeblendPlan& p, const CleanPlan& c) {
  const int32_t n = p.counters->objects;
  for (int32_t i = 0; i < n; ++i) c.survives[i] = 1;
  for (int32_t i = 0; i < n; ++i) {
    if (!c.survives[i]) continue;
    auto apply = [&](int32_t j, bool j_removes_i) {
      if (!c.survives[j]) return;
      if (j_removes_i) c.survives[i] = 0;
      else c.survives[j] = 0;
    };
    if (c.edge_off[i + 1] <= c.edge_capacity) {
      for (int32_t k = c.edge_off[i], end = c.edge_off[i + 1]; k < end; ++k) apply(c.edges[k] >> 1, (c.edges[k] & 1) != 0);
    } else {
      clean_pairs(p, c, i, [&](int32_t j, int outcome) { apply(j, outcome == 2); });
    }
  }
}

// Chain position t: its object's new label (new_id: exclusive scan of survives), 0 if cleaned;
// a pixel of an object CLEAN removed is 0 in `detected`, when given, or 2 where a merge leaves it
// blanked (kernels::DeblendInput::detected: rows after the merge's line - blank_lag).
IMFLOW_HOST_DEVICE inline void paint_job(const DeblendPlan& p, const CleanPlan& c, int32_t* labels_out,
                                         uint8_t* detected, int32_t t) {
  const int32_t r = segment_of(p, t);
  const int32_t own = p.obj_off[r] + (p.seg_branches[r] > 0 ? p.owner[t] : 0);
  const int32_t o = c.merging ? c.owner[own] : own;  // a merged object's pixels take its survivor's label
  const bool kept = c.survives[o] != 0;
  if (kept) labels_out[p.chain[t]] = c.new_id[o] + 1;
  if (detected == nullptr || (kept && o == own)) return;
  uint8_t value = 0;
  if (c.merging) {  // merged on the line after the later object's segment ends
    const int32_t eater = c.state[own].eaten_by;
    const long long line = static_cast<long long>(p.objects[own > eater ? own : eater].last_row) + 1;
    if (p.chain[t] / p.width > line - p.blank_lag) value = 2;
  }
  detected[p.chain[t]] = value;
}

// SEP's OBJ_TRUNC of object o: a lone segment's box touches the image edge; a blended object's
// branch (its pixels above the split level, not those allocated to it) has a pixel on the edge.
IMFLOW_HOST_DEVICE inline bool touches_edge(const DeblendPlan& p, int32_t o) {
  const int32_t r = p.obj_seg[o];
  const auto on_edge = [&p](int32_t i) {
    const int32_t x = i % p.width, y = i / p.width;
    return x == 0 || y == 0 || x == p.width - 1 || y == p.height - 1;
  };
  if (p.seg_branches[r] == 0) {
    const int32_t l = p.seg_label[r];
    return p.label_xmin[l] == 0 || p.label_xmax[l] == p.width - 1 || p.label_first[l] / p.width == 0 ||
           p.label_last[l] / p.width == p.height - 1;
  }
  const int32_t* branch = p.branch_pixels + p.seg_off[r] + p.obj_bstart[o];
  for (int32_t i = 0; i < p.obj_bnpix[o]; ++i)
    if (on_edge(branch[i])) return true;
  return false;
}

IMFLOW_HOST_DEVICE inline void record_job(const DeblendPlan& p, const CleanPlan& c, DeblendRecord* records, int32_t o) {
  if (!c.survives[o]) return;
  const int32_t r = p.obj_seg[o];
  const CleanObject& obj = p.objects[o];
  DeblendRecord rec;
  rec.x = obj.mx;
  rec.y = obj.my;
  rec.npix = p.obj_npix[o];
  rec.segment = p.seg_label[r];
  rec.thresh = p.seg_thresh0[r];
  rec.flux = obj.fdflux;
  rec.blended = p.seg_branches[r] > 0 ? 1 : 0;
  rec.truncated = touches_edge(p, o) ? 1 : 0;
  rec.singular = obj.singular ? 1 : 0;
  rec.merged = 0;
  if (c.merging) {  // SExtractor's running sums and or-ed flags
    const SextractorState& s = c.state[o];
    rec.npix = s.fdnpix;
    rec.flux = s.fdflux;
    rec.merged = s.merged;
    rec.truncated = rec.truncated != 0 || s.truncated != 0 ? 1 : 0;
  }
  records[c.new_id[o]] = rec;
}

IMFLOW_HOST_DEVICE inline void summary_job(const DeblendPlan& p, const CleanPlan& c, DeblendSummary* summary,
                                           int32_t* nlabels_out) {
  const DeblendCounters& k = *p.counters;
  const int32_t survivors = c.new_id[k.objects];
  DeblendSummary s;
  s.objects = k.objects;
  s.survivors = survivors;
  s.segments = k.segments;
  s.segments_split = k.segments_split;
  s.error = k.error;
  s.valid = 1;
  s.draws = p.draw_index[k.kept];  // the exclusive scan's last entry: all draws
  s.edges = k.edges;
  *summary = s;
  if (nlabels_out != nullptr) *nlabels_out = survivors;
}

}  // namespace imflow::cuda::deblend_detail
