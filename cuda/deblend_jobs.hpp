// The GPU deblending's per-index jobs (cuda/deblend.hpp), host and device: each function does
// the work of one thread (one pixel, one label or one segment) or of one warp (a team,
// cuda/deblend_team.hpp: one segment's split, one object's measurements) on the arrays of a
// DeblendPlan, so that cuda/deblend_kernels.cu only launches them. In stream order:
//   census:     label_stats_job (per pixel), segment_job (per segment in SEP's order: label,
//               pixel count, working-area size), then scans give each segment its pixels and
//               working area; pixel_key sorts the pixels by segment (raster order kept);
//   split:      tree_job (cuda/deblend_branches.hpp), one warp per segment;
//   objects:    objects_job (per segment: its objects, numbered in SEP's order), model_job (one
//               warp per blended object: its branch's Gaussian model);
//   allocation: weights_job (per pixel in chain order: the branches' summed weight, whether SEP
//               draws), a scan numbers the draws over the whole image in SEP's order, and
//               allocate_job takes the draw's seed by jumping rand_r ahead to it (mode 2,
//               SExtractor's rand(): rand_stream_job, one thread, writes the image's stream first);
//   measure:    alloc_key sorts the allocated pixels by object (chain order kept), measure_job
//               (one warp per object: SEP's analyse over its branch's pixels then its allocated
//               ones, and CLEAN's mthresh). CLEAN and the outputs: cuda/deblend_clean.hpp.
#pragma once
#include <cstdint>

#include "cuda/deblend_sep.hpp"
#include "cuda/deblend_branches.hpp"

namespace imflow::cuda::deblend_detail {

// Scalars the jobs write on the device; the host reads the census part at the one sync point.
struct DeblendCounters {
  int32_t nlabels;        // n (from the host or the device)
  int32_t segments;       // segments of at least minarea pixels
  int32_t kept;           // their pixels
  int32_t error;          // DeblendError
  long long arena_words;  // the segments' working areas
  int32_t objects;        // objects before CLEAN
  int32_t segments_split;
  int32_t survivors;      // objects after CLEAN
  int32_t big;            // CLEAN: objects compared with every other one
  long long edges;        // CLEAN: pairs where one removes the other (edge storage needed)
  float threshold;        // float(*threshold_device), when the threshold is on the device
  int32_t host_splits;    // segments split on the host (cuda/deblend_host_split.hpp)
};

// A segment the host splits, as the census lists it: its pixels pixels[offset, + npix), its box.
struct HostSplitJob {
  int32_t segment, offset, npix, x0, y0, width, height;
};

// Every array of one deblending call (device pointers on the device, host ones in host tests).
struct DeblendPlan {
  Pixels im;
  const int32_t* labels = nullptr;
  int32_t width = 0, height = 0;
  int32_t label_bound = 0;  // per-label arrays hold label_bound + 1 entries
  int nthresh = 32, minarea = 5, min_pixels = 3, mode = 0;  // mode 0: SEP's draws, 1: most probable, 2: SExtractor's
  double mincont = 0.005, beta = 1.0;
  bool clean = true;
  int clean_style = 0;  // 0: SEP's clean(), 1: SExtractor's (cuda/deblend_clean_sextractor.hpp)
  int blank_lag = 0;    // kernels::DeblendParams::blank_lag
  int memory_bufsize = 1024, memory_objstack = 3000;  // kernels::DeblendParams' (clean_style sextractor)
  DeblendCounters* counters = nullptr;
  // per label
  int32_t *label_npix = nullptr, *label_first = nullptr, *label_last = nullptr, *label_xmin = nullptr,
          *label_xmax = nullptr, *label_rank = nullptr;
  // per segment (SEP's order)
  int32_t *seg_pixel = nullptr, *seg_label = nullptr, *seg_npix = nullptr, *seg_off = nullptr;
  long long *seg_words = nullptr, *arena_off = nullptr;
  int32_t *seg_branches = nullptr, *seg_objects = nullptr, *obj_off = nullptr;
  float* seg_thresh0 = nullptr;
  int32_t host_min = 0;                  // segments of at least host_min pixels may be split on the host (0: none)
  HostSplitJob* host_jobs = nullptr;     // their list (host_splits entries)
  // per pixel of a segment
  int32_t* pixels = nullptr;  // grouped by segment, raster order
  int32_t* chain = nullptr;   // the same, each segment in chain order
  int32_t* branch_pixels = nullptr;
  int32_t* pixel_branch = nullptr;  // per image pixel (the output map, as scratch until painted)
  int32_t* arena = nullptr;
  int32_t* owner = nullptr;  // per chain position: its object within the segment
  float* weight_total = nullptr;
  int32_t* nearest = nullptr;
  uint32_t *draw_flag = nullptr, *draw_index = nullptr;
  int32_t* rand_stream = nullptr;  // mode 2: glibc's rand() values, one per draw
  int32_t* alloc_sorted = nullptr;  // chain positions of allocated pixels, by object, chain order
  float* heap = nullptr;
  // per object (SEP's catalog order)
  int32_t *obj_seg = nullptr, *obj_bstart = nullptr, *obj_bnpix = nullptr, *obj_alloc = nullptr,
          *alloc_off = nullptr, *obj_npix = nullptr, *obj_pix_off = nullptr;
  float* obj_level = nullptr;
  BranchModel* model = nullptr;
  CleanObject* objects = nullptr;
};

// ---- census

IMFLOW_HOST_DEVICE inline void label_stats_job(const DeblendPlan& p, int32_t i) {
  const int32_t l = p.labels[i];
  if (l == 0) return;
  if (l < 0 || l > p.counters->nlabels) {
    report_error(&p.counters->error, kErrorLabelRange);
    return;
  }
  const int32_t x = i % p.width;
  atomic_add(p.label_npix + l, 1);
  atomic_min(p.label_first + l, i);
  atomic_max(p.label_last + l, i);
  atomic_min(p.label_xmin + l, x);
  atomic_max(p.label_xmax + l, x);
}

// Whether pixel i ends a segment SEP keeps: the last pixel in raster order of a label of at least
// minarea pixels (SEP's scan completes segments in that order).
IMFLOW_HOST_DEVICE inline bool ends_segment(const DeblendPlan& p, int32_t i) {
  const int32_t l = p.labels[i];
  return l > 0 && l <= p.counters->nlabels && p.label_last[l] == i && p.label_npix[l] >= p.minarea;
}

// Segment r (< counters->segments): its label, rank, pixels and working-area size.
IMFLOW_HOST_DEVICE inline void segment_job(const DeblendPlan& p, int32_t r) {
  const int32_t l = p.labels[p.seg_pixel[r]];
  p.seg_label[r] = l;
  p.label_rank[l] = r;
  const int32_t n = p.label_npix[l];
  p.seg_npix[r] = n;
  const int64_t width = static_cast<int64_t>(p.label_xmax[l]) - p.label_xmin[l] + 1;
  // A label wider than its pixel count is not connected: tree_job reports it; no stacks needed.
  p.seg_words[r] = width > n ? 0 : TreeLayout(n, width, p.min_pixels).words;
}

// Sort key of pixel i: its segment's rank, or `sentinel` (outside the kept segments).
IMFLOW_HOST_DEVICE inline uint32_t pixel_key(const DeblendPlan& p, int32_t i, uint32_t sentinel) {
  const int32_t l = p.labels[i];
  if (l <= 0 || l > p.counters->nlabels || p.label_npix[l] < p.minarea) return sentinel;
  return static_cast<uint32_t>(p.label_rank[l]);
}

IMFLOW_HOST_DEVICE inline TreeArgs tree_args(const DeblendPlan& p) {
  TreeArgs a;
  a.im = p.im;
  a.pixels = p.pixels;
  a.seg_off = p.seg_off;
  a.seg_label = p.seg_label;
  a.label_xmin = p.label_xmin;
  a.label_xmax = p.label_xmax;
  a.arena_off = p.arena_off;
  a.arena = p.arena;
  a.chain = p.chain;
  a.branch_pixels = p.branch_pixels;
  a.pixel_branch = p.pixel_branch;
  a.seg_branches = p.seg_branches;
  a.seg_thresh0 = p.seg_thresh0;
  a.error = &p.counters->error;
  a.nthresh = p.nthresh;
  a.mincont = p.mincont;
  a.min_pixels = p.min_pixels;
  a.lowest_thresh = p.clean_style == 1;
  return a;
}

// ---- objects

IMFLOW_HOST_DEVICE inline void object_count_job(const DeblendPlan& p, int32_t r) {
  const int32_t nb = p.seg_branches[r];
  p.seg_objects[r] = nb > 0 ? nb : 1;
  if (nb > 0) atomic_add(&p.counters->segments_split, 1);
}

IMFLOW_HOST_DEVICE inline void objects_job(const DeblendPlan& p, int32_t r) {
  const int32_t nb = p.seg_branches[r], first = p.obj_off[r];
  if (nb == 0) {
    p.obj_seg[first] = r;
    p.obj_bstart[first] = 0;
    p.obj_bnpix[first] = 0;
    p.obj_level[first] = 0.0f;
    return;
  }
  const int32_t n = p.seg_npix[r];
  const int64_t width = static_cast<int64_t>(p.label_xmax[p.seg_label[r]]) - p.label_xmin[p.seg_label[r]] + 1;
  const TreeLayout L(n, width, p.min_pixels);
  const int32_t* area = p.arena + p.arena_off[r];
  for (int32_t b = 0; b < nb; ++b) {
    const BranchRecord br = branch_record(area, L, b);
    p.obj_seg[first + b] = r;
    p.obj_bstart[first + b] = br.start;
    p.obj_bnpix[first + b] = br.npix;
    p.obj_level[first + b] = br.level;
  }
}

// The segment holding chain position t (seg_off has segments + 1 entries).
IMFLOW_HOST_DEVICE inline int32_t segment_of(const DeblendPlan& p, int32_t t) {
  int32_t lo = 0, hi = p.counters->segments;  // seg_off[lo] <= t < seg_off[hi]
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (p.seg_off[mid] <= t) lo = mid;
    else hi = mid;
  }
  return lo;
}

// clean_style sextractor with a threshold per pixel: SExtractor's detection weighting, under which
// every abcor is 1 and each object's CLEAN threshold is the lowest of its own pixels' (the CPU's
// SegmentPixels::sextractor_weighted).
IMFLOW_HOST_DEVICE inline bool sextractor_weighted(const DeblendPlan& p) {
  return p.clean_style == 1 && p.im.thresh != nullptr;
}

// Object o of a blended segment: its branch measured on its own pixels, then its model. By a
// team (one warp per object on the device).
template <class TeamT>
IMFLOW_HOST_DEVICE void model_job(const TeamT& team, const DeblendPlan& p, int32_t o) {
  const int32_t r = p.obj_seg[o];
  if (p.seg_branches[r] == 0) return;
  const int32_t* px = p.branch_pixels + p.seg_off[r] + p.obj_bstart[o];
  SepObject so;
  so.thresh = p.obj_level[o];
  so.merged = true;
  sep_analyse(team, p.im, [px](int64_t i) { return px[i]; }, p.obj_bnpix[o], false, so);
  so.thresh = p.seg_thresh0[r];  // past the deblending: back to the segment's threshold
  if (sextractor_weighted(p)) so.abcor = 1.0f;
  BranchModel m;
  m.mx = so.mx;
  m.my = so.my;
  m.cxx = so.cxx;
  m.cyy = so.cyy;
  m.cxy = so.cxy;
  m.abcor = so.abcor;
  m.amp = branch_amplitude(so);
  m.singular = so.singular;
  if (team.lane == 0) p.model[o] = m;
}

// ---- allocation

// Chain position t: a branch pixel keeps its branch; any other pixel of a blended segment gets
// the branches' cumulative weight (SEP's p[nb], float) and the nearest branch (iclst), and
// draw_flag 1 when SEP draws a number for it.
IMFLOW_HOST_DEVICE inline void weights_job(const DeblendPlan& p, int32_t t) {
  const int32_t r = segment_of(p, t);
  const int32_t nb = p.seg_branches[r];
  p.draw_flag[t] = 0;
  if (nb == 0) {
    p.owner[t] = 0;
    return;
  }
  const int32_t pixel = p.chain[t];
  const int32_t b = p.pixel_branch[pixel];
  if (b >= 0) {
    p.owner[t] = b;
    return;
  }
  const int64_t y = pixel / p.width, x = pixel - y * p.width;
  const BranchModel* models = p.model + p.obj_off[r];
  float distmin = 1e+31f, cumulative = 0.0f;
  int32_t iclst = 0;
  for (int32_t i = 1; i <= nb; ++i) {
    float dist;
    const double term = branch_term(models[i - 1], x, y, dist);
    cumulative = static_cast<float>(cumulative + term);
    if (dist < distmin) {
      distmin = dist;
      iclst = i;
    }
  }
  p.owner[t] = -1;
  p.weight_total[t] = cumulative;
  p.nearest[t] = iclst;
  if (cumulative > 1.0e-31) p.draw_flag[t] = 1;  // counted in both modes (DeblendResult::random_draws)
}

// Mode 2 (one thread): the image's draws from glibc's rand() without srand (kernels::glibc_rand_stream:
// random()'s r[i] = r[i - 31] + r[i - 3] after 310 discarded steps, each value r >> 1).
IMFLOW_HOST_DEVICE inline void rand_stream_job(const DeblendPlan& p) {
  const long long count = p.draw_index[p.counters->kept];
  uint32_t r[34];
  r[0] = 1u;
  for (int i = 1; i < 31; ++i) r[i] = static_cast<uint32_t>((16807ull * r[i - 1]) % 2147483647ull);
  for (int i = 31; i < 34; ++i) r[i] = r[i - 31];
  for (long long k = 34; k < 344 + count; ++k) {
    const uint32_t v = r[(k - 31) % 34] + r[(k - 3) % 34];
    r[k % 34] = v;
    if (k >= 344) p.rand_stream[k - 344] = static_cast<int32_t>(v >> 1);
  }
}

// Chain position t of weights_job's pixels to allocate: SEP's choice (draw_index: how many draws
// SEP made before this one in the whole image).
IMFLOW_HOST_DEVICE inline void allocate_job(const DeblendPlan& p, int32_t t) {
  if (p.owner[t] >= 0) return;
  const int32_t r = segment_of(p, t);
  const int32_t nb = p.seg_branches[r];
  const int32_t pixel = p.chain[t];
  const int64_t y = pixel / p.width, x = pixel - y * p.width;
  const BranchModel* models = p.model + p.obj_off[r];
  const float total = p.weight_total[t];
  const int32_t iclst = p.nearest[t];
  int32_t i = iclst;
  if (total > 1.0e-31) {
    if (p.mode != 1) {
      uint32_t seed = p.mode == 0 ? kernels::glibc_rand_r_skip(1u, p.draw_index[t]) : 0u;
      const int32_t value = p.mode == 0 ? kernels::glibc_rand_r(seed) : p.rand_stream[p.draw_index[t]];
      const float drand = total * static_cast<float>(value) / kRandMax;
      float cumulative = 0.0f;
      i = nb + 1;
      for (int32_t j = 1; j <= nb; ++j) {
        float dist;
        cumulative = static_cast<float>(cumulative + branch_term(models[j - 1], x, y, dist));
        if (!(cumulative < drand)) {
          i = j;
          break;
        }
      }
      if (i == nb + 1) i = iclst;
    } else {
      float best = 0.0f;
      for (int32_t j = 1; j <= nb; ++j) {
        float dist;
        const float weight = static_cast<float>(branch_term(models[j - 1], x, y, dist));
        if (j == 1 || weight > best) {
          best = weight;
          i = j;
        }
      }
    }
  }
  if (i < 1) i = 1;  // SEP indexes branch -1 here (every distance NaN); keep it defined
  p.owner[t] = i - 1;
  atomic_add(p.obj_alloc + p.obj_off[r] + i - 1, 1);
}

// Sort key of chain position t: its object when it was allocated, else `sentinel`.
IMFLOW_HOST_DEVICE inline uint32_t alloc_key(const DeblendPlan& p, int32_t t, uint32_t sentinel) {
  const int32_t r = segment_of(p, t);
  if (p.seg_branches[r] == 0 || p.pixel_branch[p.chain[t]] >= 0) return sentinel;
  return static_cast<uint32_t>(p.obj_off[r] + p.owner[t]);
}

IMFLOW_HOST_DEVICE inline void npix_job(const DeblendPlan& p, int32_t o) {
  const int32_t r = p.obj_seg[o];
  p.obj_npix[o] = p.seg_branches[r] == 0 ? p.seg_npix[r] : p.obj_bnpix[o] + p.obj_alloc[o];
}

// Object o: SEP's final analyse over its pixels (a blended object's branch, then its allocated
// pixels, each in chain order), and CLEAN's mthresh. By a team (one warp per object).
template <class TeamT>
IMFLOW_HOST_DEVICE void measure_job(const TeamT& team, const DeblendPlan& p, int32_t o) {
  const int32_t r = p.obj_seg[o];
  const int32_t off = p.seg_off[r];
  SepObject so;
  so.thresh = p.seg_thresh0[r];
  const int64_t n = p.obj_npix[o];
  float mthresh = 0.0f;
  float* heap = p.heap + p.obj_pix_off[o];
  if (p.seg_branches[r] == 0) {
    const int32_t* px = p.chain + off;
    auto at = [px](int64_t i) { return px[i]; };
    sep_analyse(team, p.im, at, n, true, so);
    if (p.clean) mthresh = sep_mthresh(team, p.im, at, n, p.minarea, heap);
  } else {
    so.merged = true;
    so.mx = p.model[o].mx;
    so.my = p.model[o].my;
    so.singular = p.model[o].singular;
    const int32_t* branch = p.branch_pixels + off + p.obj_bstart[o];
    const int32_t nbranch = p.obj_bnpix[o];
    const int32_t* allocated = p.alloc_sorted + p.alloc_off[o];
    const int32_t* chain = p.chain;
    auto at = [branch, nbranch, allocated, chain](int64_t i) {
      return i < nbranch ? branch[i] : chain[allocated[i - nbranch]];
    };
    if (sextractor_weighted(p)) {  // SExtractor's sortit preanalyse: the lowest threshold of its pixels
      float lowest = 1e30f;
      for (int64_t i = team.lane; i < n; i += team.size) {
        const float t = p.im.thresh[at(i)];
        lowest = t < lowest ? t : lowest;
      }
      so.thresh = team_reduce(team, lowest, [](float u, float v) { return v < u ? v : u; });
    }
    sep_analyse(team, p.im, at, n, true, so);
    if (p.clean) mthresh = sep_mthresh(team, p.im, at, n, p.minarea, heap);
  }
  if (sextractor_weighted(p)) so.abcor = 1.0f;
  CleanObject c;
  c.mx = so.mx;
  c.my = so.my;
  c.a = so.a;
  c.b = so.b;
  c.cxx = so.cxx;
  c.cyy = so.cyy;
  c.cxy = so.cxy;
  c.abcor = so.abcor;
  c.fdflux = so.fdflux;
  c.thresh = so.thresh;
  c.mthresh = mthresh;
  c.fdnpix = so.fdnpix;
  c.ymin = static_cast<int32_t>(so.ymin);
  c.ymax = static_cast<int32_t>(so.ymax);
  c.last_row = p.label_last[p.seg_label[r]] / p.width;
  c.singular = so.singular;
  if (team.lane == 0) p.objects[o] = c;
}

}  // namespace imflow::cuda::deblend_detail
