// A warp working on one segment of the GPU deblending (cuda/deblend_tree.hpp), host and device:
// on the device the 32 lanes of a warp, on the host one lane, so the same code is the host's
// reference run. Sequential logic runs on lane 0 (`if (team.lane == 0)`, then sync); the work
// per pixel is spread over the lanes; sums that SEP takes in a given order are accumulated in
// that order from the lanes' values (shuffles here; an object's sums on a lane each from a
// shared-memory stage, cuda/deblend_walk.hpp), so they round as SEP's.
#pragma once
#include <cstdint>

#include "imflow/kernels/host_device.hpp"

namespace imflow::cuda::deblend_detail {

IMFLOW_HOST_DEVICE inline int32_t atomic_add(int32_t* p, int32_t v) {
#ifdef __CUDA_ARCH__
  return atomicAdd(p, v);
#else
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}
IMFLOW_HOST_DEVICE inline void atomic_max(int32_t* p, int32_t v) {
#ifdef __CUDA_ARCH__
  atomicMax(p, v);
#else
  if (v > *p) *p = v;
#endif
}
IMFLOW_HOST_DEVICE inline void atomic_min(int32_t* p, int32_t v) {
#ifdef __CUDA_ARCH__
  atomicMin(p, v);
#else
  if (v < *p) *p = v;
#endif
}

struct Team {
  int lane = 0, size = 1;
  float* stage = nullptr;  // the warp's staging area in shared memory, where its kernel gives one
  IMFLOW_HOST_DEVICE void sync() const {
#ifdef __CUDA_ARCH__
    __syncwarp();
#endif
  }
  IMFLOW_HOST_DEVICE uint32_t ballot(bool b) const {
#ifdef __CUDA_ARCH__
    return __ballot_sync(0xffffffffu, b);
#else
    return b ? 1u : 0u;
#endif
  }
  template <class T>
  IMFLOW_HOST_DEVICE T shfl(T v, int from) const {
#ifdef __CUDA_ARCH__
    return __shfl_sync(0xffffffffu, v, from);
#else
    (void)from;
    return v;
#endif
  }
  // The lanes holding the same v.
  IMFLOW_HOST_DEVICE uint32_t match(int32_t v) const {
#ifdef __CUDA_ARCH__
    return __match_any_sync(0xffffffffu, v);
#else
    (void)v;
    return 1u;
#endif
  }
  IMFLOW_HOST_DEVICE uint32_t below() const { return (1u << lane) - 1u; }
};

IMFLOW_HOST_DEVICE inline int popcount(uint32_t v) {
#ifdef __CUDA_ARCH__
  return __popc(v);
#else
  return __builtin_popcount(v);
#endif
}
IMFLOW_HOST_DEVICE inline int lowest_bit(uint32_t v) {
#ifdef __CUDA_ARCH__
  return __ffs(static_cast<int>(v)) - 1;
#else
  return __builtin_ctz(v);
#endif
}

// The first set bit at index >= from (one exists: the list's last entry ends its run and row).
IMFLOW_HOST_DEVICE inline int32_t next_set(const uint32_t* words, int32_t from) {
  int32_t w = from >> 5;
  uint32_t bits = words[w] & (~0u << (from & 31));
  while (bits == 0) bits = words[++w];
  return (w << 5) + lowest_bit(bits);
}

// For entries 0..m-1 of a raster-ordered list (xy(e, x, y)): bit e of run_end: e is the last of
// its run (the next entry is not the next column of the same row); of row_end: the last of its
// row. ceil(m / 32) words each. Ends with a sync.
template <class TeamT, class XY>
IMFLOW_HOST_DEVICE void list_bits(const TeamT& team, int32_t m, const XY& xy, uint32_t* run_end, uint32_t* row_end) {
  for (int32_t base = 0; base < m; base += 32) {
    uint32_t run_word = 0, row_word = 0;
    for (int32_t j0 = 0; j0 < 32; j0 += team.size) {
      const int32_t e = base + j0 + team.lane;
      bool ends_run = false, ends_row = false;
      if (e < m) {
        ends_run = ends_row = true;
        if (e + 1 < m) {
          int32_t x, y, nx, ny;
          xy(e, x, y);
          xy(e + 1, nx, ny);
          ends_row = ny != y;
          ends_run = ends_row || nx != x + 1;
        }
      }
      const uint32_t run_bits = team.ballot(ends_run), row_bits = team.ballot(ends_row);
      run_word |= team.size == 1 ? run_bits << j0 : run_bits;
      row_word |= team.size == 1 ? row_bits << j0 : row_bits;
    }
    if (team.lane == 0) {
      run_end[base >> 5] = run_word;
      row_end[base >> 5] = row_word;
    }
  }
  team.sync();
}

// The chain from `first` (a list of pieces: piece_len at a piece's first entry, the next
// piece's first entry in next at its last, -1 at the end). Every lane calls visit(e, t) for its
// entries (t: the entry's place in the chain) and load(e, a, b) for their values; then every
// lane calls accumulate(a, b) for all entries in chain order. Returns the chain's length.
template <class TeamT, class Load, class Visit, class Accumulate>
IMFLOW_HOST_DEVICE int32_t walk_chain(const TeamT& team, const int32_t* piece_len, const int32_t* next, int32_t first,
                                      Load&& load, Visit&& visit, Accumulate&& accumulate) {
  int32_t t = 0;
  for (int32_t e0 = first; e0 != -1;) {
    const int32_t len = piece_len[e0];
    for (int32_t c = 0; c < len; c += team.size) {
      const int32_t k = c + team.lane;
      float a = 0.0f, b = 0.0f;
      if (k < len) {
        load(e0 + k, a, b);
        visit(e0 + k, t + k);
      }
      const int32_t count = len - c < team.size ? len - c : team.size;
      for (int32_t j = 0; j < count; ++j) accumulate(team.shfl(a, j), team.shfl(b, j));
    }
    t += len;
    e0 = next[e0 + len - 1];
  }
  team.sync();
  return t;
}

// walk_chain without values.
template <class TeamT, class Visit>
IMFLOW_HOST_DEVICE int32_t visit_chain(const TeamT& team, const int32_t* piece_len, const int32_t* next, int32_t first,
                                       Visit&& visit) {
  int32_t t = 0;
  for (int32_t e0 = first; e0 != -1;) {
    const int32_t len = piece_len[e0];
    for (int32_t k = team.lane; k < len; k += team.size) visit(e0 + k, t + k);
    t += len;
    e0 = next[e0 + len - 1];
  }
  team.sync();
  return t;
}

}  // namespace imflow::cuda::deblend_detail
