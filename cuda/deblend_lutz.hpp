// SEP's Lutz scan (lutz.c; kernels' deblend_detail::lutz_scan) over a raster-ordered list of
// pixels instead of a mask, host and device. It visits only the positions where the pixel scan
// does something (the starts and ends of the runs of the current row and of the row above, where
// the markers are), finds the runs' and rows' ends in bitmasks (list_bits, cuda/deblend_team.hpp)
// and appends each stretch of a run between two such positions to the chain at once, as one
// piece: O(runs) steps instead of O(bounding box), with the same components, completed in the
// same order, each with its pixels linked in the same order (SEP's chain order).
#pragma once
#include <cstdint>

#include "cuda/deblend_team.hpp"

namespace imflow::cuda::deblend_detail {

// The scan's stacks for a bounding box `width` columns wide: 12 (width + 2) int32 words.
struct LutzStacks {
  int32_t *info_n, *info_first, *info_last;
  int32_t *store_n, *store_first, *store_last;
  int32_t *marker, *start, *end;
  int32_t* psstack;  // 2 (width + 2)
  IMFLOW_HOST_DEVICE static int64_t words(int64_t width) { return 12 * (width + 2); }
  IMFLOW_HOST_DEVICE static LutzStacks carve(int32_t* p, int64_t width) {
    const int64_t c = width + 2;
    LutzStacks s;
    s.info_n = p;
    s.info_first = p + c;
    s.info_last = p + 2 * c;
    s.store_n = p + 3 * c;
    s.store_first = p + 4 * c;
    s.store_last = p + 5 * c;
    s.marker = p + 6 * c;
    s.start = p + 7 * c;
    s.end = p + 8 * c;
    s.psstack = p + 9 * c;
    return s;
  }
};

namespace lutz_detail {
enum : int32_t { kComplete = 0, kIncomplete = 1, kNonObject = 2, kObject = 3 };
constexpr int32_t kUnknown = -1;
constexpr int32_t kNone = 0x7fffffff;

// The positions of a row's runs in order: start x, end x + 1, start, end + 1, ...
template <class XY>
struct RowPositions {
  const XY* xy;
  const uint32_t* run_end;
  int32_t e, end;       // next unread entry, end of the row's entries
  int32_t pending = kNone;  // a run's end position still to give
  int32_t run_e0 = 0, run_x0 = 0, run_x1 = -1;  // the last run read: first entry, columns
  IMFLOW_HOST_DEVICE int32_t peek() const {
    if (pending != kNone) return pending;
    if (e >= end) return kNone;
    int32_t x, y;
    (*xy)(e, x, y);
    return x;
  }
  // Consumes the position peek() gave; at a run start, reads the run.
  IMFLOW_HOST_DEVICE void take() {
    if (pending != kNone) {
      pending = kNone;
      return;
    }
    int32_t x, y;
    (*xy)(e, x, y);
    run_e0 = e;
    run_x0 = x;
    const int32_t last = next_set(run_end, e);
    run_x1 = x + (last - e);
    e = last + 1;
    pending = run_x1 + 1;
  }
};
}  // namespace lutz_detail

// The components of the m list entries (raster order, distinct pixels): xy(e, x, y) gives
// entry e's column relative to the bounding box (0..width-1) and its row; run_end and row_end
// from list_bits. Calls done(first, npix) for every component in the order the scan completes it
// (SEP's order): its chain of pieces starts at entry `first` (walk_chain: piece_len[e] at a
// piece's first entry, next[e] at its last). One thread.
template <class XY, class Done>
IMFLOW_HOST_DEVICE void lutz_list(int32_t m, const XY& xy, int32_t width, const LutzStacks& s, int32_t* next,
                                  int32_t* piece_len, const uint32_t* run_end, const uint32_t* row_end, Done&& done) {
  using namespace lutz_detail;
  const int32_t cap = width + 2;
  for (int32_t i = 0; i < cap; ++i) {
    s.info_n[i] = 0;
    s.info_first[i] = s.info_last[i] = -1;
    s.store_n[i] = 0;
    s.store_first[i] = s.store_last[i] = -1;
    s.marker[i] = 0;
    s.start[i] = s.end[i] = 0;
    s.psstack[2 * i] = s.psstack[2 * i + 1] = kComplete;
  }
  int32_t co = 0, pstop = 0;
  // update(a, b): append chain b to chain a.
  auto update = [&](int32_t& an, int32_t& af, int32_t& al, int32_t bn, int32_t bf, int32_t bl) {
    an += bn;
    if (af == -1) {
      af = bf;
      al = bl;
    } else if (bl != -1) {
      next[al] = bf;
      al = bl;
    }
  };

  // One row: the runs of entries [cb, ce) below the row of entries [pb, pe) (empty: none above).
  auto row = [&](int32_t pb, int32_t pe, int32_t cb, int32_t ce) {
    int32_t ps = kComplete, cs = kNonObject;
    RowPositions<XY> prev{&xy, run_end, pb, pe};
    RowPositions<XY> cur{&xy, run_end, cb, ce};
    bool in_run = false;
    while (true) {
      const int32_t pc = cur.peek(), pp = prev.peek();
      const int32_t xl = pc < pp ? pc : pp;
      if (xl == kNone) break;
      if (pp == xl) prev.take();
      bool on = false;
      if (pc == xl) {
        cur.take();
        on = !in_run;  // a run start (else the end of the run)
        in_run = on;
      } else {
        on = in_run;  // a marker inside a run or between runs
      }
      const int32_t newmarker = s.marker[xl];
      s.marker[xl] = 0;
      if (on && cs != kObject) {
        cs = kObject;
        if (ps == kObject) {
          if (s.start[co] == kUnknown) {
            s.marker[xl] = 'S';
            s.start[co] = xl;
          } else {
            s.marker[xl] = 's';
          }
        } else {
          s.psstack[pstop++] = ps;
          s.marker[xl] = 'S';
          s.start[++co] = xl;
          ps = kComplete;
          s.info_n[co] = 0;
          s.info_first[co] = s.info_last[co] = -1;
        }
      }
      if (newmarker != 0) {
        if (newmarker == 'S') {
          s.psstack[pstop++] = ps;
          if (cs == kNonObject) {
            s.psstack[pstop++] = kComplete;
            ++co;
            s.info_n[co] = s.store_n[xl];
            s.info_first[co] = s.store_first[xl];
            s.info_last[co] = s.store_last[xl];
            s.start[co] = kUnknown;
          } else {
            update(s.info_n[co], s.info_first[co], s.info_last[co], s.store_n[xl], s.store_first[xl], s.store_last[xl]);
          }
          ps = kObject;
        } else if (newmarker == 's') {
          if (cs == kObject && ps == kComplete) {
            pstop--;
            const int32_t xl2 = s.start[co];
            update(s.info_n[co - 1], s.info_first[co - 1], s.info_last[co - 1], s.info_n[co], s.info_first[co],
                   s.info_last[co]);
            if (s.start[--co] == kUnknown) {
              s.start[co] = xl2;
            } else {
              s.marker[xl2] = 's';
            }
          }
          ps = kObject;
        } else if (newmarker == 'f') {
          ps = kIncomplete;
        } else if (newmarker == 'F') {
          ps = s.psstack[--pstop];
          if (cs == kNonObject && ps == kComplete) {
            if (s.start[co] == kUnknown) {
              done(s.info_first[co], s.info_n[co]);
            } else {
              s.marker[s.end[co]] = 'F';
              s.store_n[s.start[co]] = s.info_n[co];
              s.store_first[s.start[co]] = s.info_first[co];
              s.store_last[s.start[co]] = s.info_last[co];
            }
            co--;
            ps = s.psstack[--pstop];
          }
        }
      }
      if (on) {
        // The pixels from xl up to the next position this loop visits, in one stretch.
        const int32_t pc2 = cur.peek(), pp2 = prev.peek();
        const int32_t stop = pc2 < pp2 ? pc2 : pp2;  // <= the run's end position
        const int32_t first = cur.run_e0 + (xl - cur.run_x0), len = stop - xl;
        piece_len[first] = len;
        next[first + len - 1] = -1;
        update(s.info_n[co], s.info_first[co], s.info_last[co], len, first, first + len - 1);
      } else if (cs == kObject) {
        cs = kNonObject;
        if (ps != kComplete) {
          s.marker[xl] = 'f';
          s.end[co] = xl;
        } else {
          ps = s.psstack[--pstop];
          s.marker[xl] = 'F';
          s.store_n[s.start[co]] = s.info_n[co];
          s.store_first[s.start[co]] = s.info_first[co];
          s.store_last[s.start[co]] = s.info_last[co];
          co--;
        }
      }
    }
  };

  // Rows in order; a row without pixels right below one with pixels completes what ends there.
  int32_t e = 0, pb = 0, pe = 0, prev_y = 0;
  bool have_prev = false;
  while (e < m || have_prev) {
    if (e >= m) {
      row(pb, pe, m, m);
      have_prev = false;
      continue;
    }
    int32_t x, y;
    xy(e, x, y);
    if (have_prev && y > prev_y + 1) {
      row(pb, pe, e, e);
      have_prev = false;
      continue;
    }
    const int32_t ce = next_set(row_end, e) + 1;
    if (have_prev) {
      row(pb, pe, e, ce);
    } else {
      row(e, e, e, ce);
    }
    pb = e;
    pe = ce;
    prev_y = y;
    have_prev = true;
    e = ce;
  }
}

}  // namespace imflow::cuda::deblend_detail
