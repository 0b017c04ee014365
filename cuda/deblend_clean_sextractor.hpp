// SExtractor 2.25's CLEAN on the GPU (deblend's clean_style: sextractor), the CPU's
// src/kernels/deblend_clean_sextractor.cpp step for step: one thread walks the objects in the
// order SExtractor's scan completes them (SEP's catalog order), tests each newcomer against the
// objects still in the CLEAN list, in list order, merges it into the first that eats it or
// merges its victims into it, and releases objects from the list as SExtractor's scan does.
// The candidates of each newcomer (earlier objects within the zone) were stored beforehand, in
// parallel, by clean_store_job; a newcomer whose candidates did not fit the edge buffer is
// tested against the whole list (the zone test decides the same).
#pragma once
#include <cmath>
#include <cstdint>

#include "cuda/deblend_clean.hpp"
#include "cuda/heap_sort.hpp"
#include "imflow/kernels/sextractor_clean_release.hpp"

namespace imflow::cuda::deblend_detail {

// addcleanobj's vertical extent of an object (its rows after its merges), float and double steps.
IMFLOW_HOST_DEVICE inline void sextractor_extent(const CleanObject& o, long long ymin, long long ymax, SextractorEntry& e) {
  float hh1 = static_cast<float>(o.cyy - static_cast<double>(o.cxy * o.cxy) / (4.0 * o.cxx));
  hh1 = hh1 > 0.0f ? static_cast<float>(1 / sqrt(static_cast<double>(3 * hh1))) : 0.0f;
  const float hh2 = static_cast<float>(static_cast<double>(ymax - ymin) + 1.0);
  double m = static_cast<double>(hh1 > hh2 ? hh1 : hh2) * 2.0 + 4.0 + 0.49999;
  m = (m - m == 0.0) ? (m < 1e15 ? m : 1e15) : 1e15;
  const long long margin = static_cast<long long>(m);
  e.ycmax = ymax + margin;
  e.ycmin = ymin - margin;
  if (o.my - o.my == 0.0 && fabs(o.my) < 1e15) {
    const long long y = static_cast<long long>(o.my + 0.49999);
    if (y > e.ycmax) e.ycmax = y;
    if (y < e.ycmin) e.ycmin = y;
  }
}

// A binary min-heap of list entries in h[0..n) under `less`.
template <typename Less>
IMFLOW_HOST_DEVICE inline void heap_push(SextractorEntry* h, int32_t& n, const SextractorEntry& e, Less less) {
  int32_t k = n++;
  while (k > 0 && less(e, h[(k - 1) / 2])) {
    h[k] = h[(k - 1) / 2];
    k = (k - 1) / 2;
  }
  h[k] = e;
}
template <typename Less>
IMFLOW_HOST_DEVICE inline SextractorEntry heap_pop(SextractorEntry* h, int32_t& n, Less less) {
  const SextractorEntry top = h[0];
  const SextractorEntry last = h[--n];
  int32_t k = 0;
  while (2 * k + 1 < n) {
    int32_t child = 2 * k + 1;
    if (child + 1 < n && less(h[child + 1], h[child])) ++child;
    if (!less(h[child], last)) break;
    h[k] = h[child];
    k = child;
  }
  if (n > 0) h[k] = last;
  return top;
}

// The walk (one thread). Writes c.state, c.owner and c.survives (1: a survivor). The list scans
// SExtractor makes per scan line (releases) and per newcomer once the stack is full (eviction)
// go through the two heaps instead: the same entries leave in the same order, with a lookup in
// O(log n) in place of a pass over up to 3000 entries.
IMFLOW_HOST_DEVICE inline void sextractor_resolve(const DeblendPlan& p, const CleanPlan& c) {
  const int32_t n = p.counters->objects;
  const long long height = p.height;
  const int64_t strip_margin = kernels::sextractor_strip_margin(p.blank_lag);
  SextractorState* st = c.state;
  SextractorEntry* list = c.list;
  int32_t count = 0;
  for (int32_t i = 0; i < n; ++i) {
    const CleanObject& o = p.objects[i];
    st[i].fdflux = o.fdflux;
    st[i].fdnpix = o.fdnpix;
    st[i].ymin = o.ymin;
    st[i].ymax = o.ymax;
    st[i].eaten_by = -1;
    st[i].position = -1;
    st[i].merged = 0;
    st[i].truncated = 0;
  }
  auto remove_at = [&](int32_t k) {  // subcleanobj
    st[list[k].index].position = -1;
    if (k + 1 != count) {
      list[k] = list[count - 1];
      st[list[k].index].position = k;
    }
    --count;
  };
  auto by_ycmin = [](const SextractorEntry& a, const SextractorEntry& b) { return a.ycmin < b.ycmin; };
  auto by_ycmax = [](const SextractorEntry& a, const SextractorEntry& b) { return a.ycmax < b.ycmax; };
  int32_t nrelease = 0, nevict = 0;
  auto listed = [&](const SextractorEntry& e) { return st[e.index].position >= 0; };
  // Every listed entry with ycmin <= first_line, removed from the highest list place down, as
  // SExtractor's backward pass does (the entry it moves into a freed place was already passed,
  // so the places of those still to remove do not change).
  auto release_after_line = [&](long long line) {
    int64_t first_line = 0;
    if (!kernels::sextractor_releases_after(line, height, p.memory_bufsize, strip_margin, first_line)) return;
    int32_t m = 0;
    while (nrelease > 0 && c.release_heap[0].ycmin <= first_line) {
      const SextractorEntry e = heap_pop(c.release_heap, nrelease, by_ycmin);
      if (listed(e)) c.positions[m++] = st[e.index].position;
    }
    heap_sort_ascending(c.positions, m);  // the candidates' list places
    for (int32_t k = m; k-- > 0;) remove_at(c.positions[k]);
  };
  // The listed entry of lowest ycmax, the first in list order among equals (SExtractor's pass).
  auto evict_one = [&] {
    while (!listed(c.evict_heap[0])) heap_pop(c.evict_heap, nevict, by_ycmax);
    const long long lowest = c.evict_heap[0].ycmax;
    int32_t m = 0;
    while (nevict > 0 && c.evict_heap[0].ycmax == lowest) {
      const SextractorEntry e = heap_pop(c.evict_heap, nevict, by_ycmax);
      if (listed(e)) c.positions[m++] = e.index;
    }
    int32_t victim = 0;
    for (int32_t k = 1; k < m; ++k)
      if (st[c.positions[k]].position < st[c.positions[victim]].position) victim = k;
    for (int32_t k = 0; k < m; ++k)
      if (k != victim) heap_push(c.evict_heap, nevict, list[st[c.positions[k]].position], by_ycmax);
    remove_at(st[c.positions[victim]].position);
  };
  auto merge = [&](int32_t slave, int32_t master) {
    st[master].fdflux += st[slave].fdflux;
    st[master].fdnpix += st[slave].fdnpix;
    if (st[slave].ymin < st[master].ymin) st[master].ymin = st[slave].ymin;
    if (st[slave].ymax > st[master].ymax) st[master].ymax = st[slave].ymax;
    st[slave].eaten_by = master;
  };
  const double beta = p.beta;
  long long released_through = -1;
  for (int32_t i = 0; i < n; ++i) {
    const CleanObject& in = p.objects[i];
    while (released_through < in.last_row) release_after_line(++released_through);
    if (count >= p.memory_objstack) evict_one();
    CleanObject inc = in;  // the newcomer with its running sums
    inc.fdflux = st[i].fdflux;
    inc.fdnpix = st[i].fdnpix;
    double ampin, alphain;
    clean_moffat(inc, beta, ampin, alphain);
    // The places to visit, in list order: the stored candidates still listed, or the whole list.
    const bool stored = c.edge_off[i + 1] <= c.edge_capacity;
    int32_t* places = c.edges + c.edge_off[i];
    int32_t nplaces = 0;
    if (stored) {
      for (int32_t k = c.edge_off[i], end = c.edge_off[i + 1]; k < end; ++k) {
        const int32_t place = st[c.edges[k]].position;
        if (place >= 0) places[nplaces++] = place;
      }
      heap_sort_ascending(places, nplaces);
    } else {
      nplaces = count;
    }
    // Victims: the newcomer's menu, kept in the places already visited (places[0..nvictims)).
    int32_t nvictims = 0, eater = -1;
    int32_t* victims = stored ? places : nullptr;
    for (int32_t v = 0; v < nplaces; ++v) {
      const int32_t place = stored ? places[v] : v;
      const int32_t j = list[place].index;
      CleanObject ob = p.objects[j];
      ob.fdflux = st[j].fdflux;
      ob.fdnpix = st[j].fdnpix;
      float dx, dy;
      if (!sextractor_zone(in, ob, dx, dy)) continue;
      if (ob.fdflux < inc.fdflux) {
        if (clean_eats(inc, ampin, alphain, beta, dx, dy, ob)) {
          if (stored) victims[nvictims] = place;
          else st[j].eaten_by = -2 - i;  // marked; merged below in list order
          ++nvictims;
        }
      } else {
        double amp, alpha;
        clean_moffat(ob, beta, amp, alpha);
        if (clean_eats(ob, amp, alpha, beta, dx, dy, inc)) {
          eater = j;
          break;
        }
      }
    }
    if (eater >= 0) {
      if (!stored)  // the marks are dropped: the newcomer eats nobody
        for (int32_t k = 0; k < count; ++k)
          if (st[list[k].index].eaten_by == -2 - i) st[list[k].index].eaten_by = -1;
      merge(i, eater);
      continue;
    }
    if (stored) {
      for (int32_t v = nvictims; v-- > 0;) {
        merge(list[victims[v]].index, i);
        remove_at(victims[v]);
      }
    } else if (nvictims > 0) {
      for (int32_t k = count; k-- > 0;) {
        if (st[list[k].index].eaten_by != -2 - i) continue;
        merge(list[k].index, i);
        remove_at(k);
      }
    }
    SextractorEntry e;
    e.index = i;
    sextractor_extent(in, st[i].ymin, st[i].ymax, e);
    st[i].position = count;
    list[count++] = e;
    heap_push(c.release_heap, nrelease, e, by_ycmin);
    heap_push(c.evict_heap, nevict, e, by_ycmax);
  }
  // Each object's survivor; a survivor's flags from what it merged.
  for (int32_t i = 0; i < n; ++i) {
    int32_t r = i;
    while (st[r].eaten_by >= 0) r = st[r].eaten_by;
    c.owner[i] = r;
    c.survives[i] = r == i ? 1 : 0;
    if (r != i) {
      st[r].merged = 1;
      if (touches_edge(p, i)) st[r].truncated = 1;
    }
  }
}

}  // namespace imflow::cuda::deblend_detail
