// A run of one label's pixels as measure sums it (cuda/measure.cu), the merge of two runs of one
// label, a warp's merge of the runs its lanes hold, and the flush of a run into the accumulators.
#pragma once
#include <climits>
#include <cstdint>

#include "cuda/measure_accumulators.cuh"
#include "imflow/kernels/pixel_moments.hpp"

namespace imflow::cuda::detail {

struct Run {
  int32_t label = 0;
  unsigned long long npix = 0;
  double flux = 0.0, sx = 0.0, sy = 0.0;
  unsigned long long peak = 0;
  unsigned int xmin = UINT_MAX, xmax = 0, ymin = UINT_MAX, ymax = 0;
  kernels::PixelMoments w, v;  // of the weights and of the variances, about the label's first pixel
  int flags = 0;

  // Another run of the same label (its moments about the same first pixel).
  __device__ void merge(const Run& o) {
    npix += o.npix;
    flux += o.flux;
    sx += o.sx;
    sy += o.sy;
    peak = o.peak > peak ? o.peak : peak;
    xmin = o.xmin < xmin ? o.xmin : xmin;
    xmax = o.xmax > xmax ? o.xmax : xmax;
    ymin = o.ymin < ymin ? o.ymin : ymin;
    ymax = o.ymax > ymax ? o.ymax : ymax;
    add_moments(w, o.w);
    add_moments(v, o.v);
    flags |= o.flags;
  }

 private:
  __device__ static void add_moments(kernels::PixelMoments& m, const kernels::PixelMoments& o) {
    m.s += o.s;
    m.sx += o.sx;
    m.sy += o.sy;
    m.sxx += o.sxx;
    m.syy += o.syy;
    m.sxy += o.sxy;
  }
};

__device__ __forceinline__ kernels::PixelMoments shfl_up(const kernels::PixelMoments& m, int delta) {
  return {__shfl_up_sync(0xFFFFFFFFu, m.s, delta),   __shfl_up_sync(0xFFFFFFFFu, m.sx, delta),
          __shfl_up_sync(0xFFFFFFFFu, m.sy, delta),  __shfl_up_sync(0xFFFFFFFFu, m.sxx, delta),
          __shfl_up_sync(0xFFFFFFFFu, m.syy, delta), __shfl_up_sync(0xFFFFFFFFu, m.sxy, delta)};
}

__device__ __forceinline__ Run shfl_up(const Run& r, int delta) {
  constexpr unsigned all = 0xFFFFFFFFu;
  Run o;
  o.label = __shfl_up_sync(all, r.label, delta);
  o.npix = __shfl_up_sync(all, r.npix, delta);
  o.flux = __shfl_up_sync(all, r.flux, delta);
  o.sx = __shfl_up_sync(all, r.sx, delta);
  o.sy = __shfl_up_sync(all, r.sy, delta);
  o.peak = __shfl_up_sync(all, r.peak, delta);
  o.xmin = __shfl_up_sync(all, r.xmin, delta);
  o.xmax = __shfl_up_sync(all, r.xmax, delta);
  o.ymin = __shfl_up_sync(all, r.ymin, delta);
  o.ymax = __shfl_up_sync(all, r.ymax, delta);
  o.w = shfl_up(r.w, delta);
  o.v = shfl_up(r.v, delta);
  o.flags = __shfl_up_sync(all, r.flags, delta);
  return o;
}

// Called by all 32 lanes, each with one run (label 0: none): the lanes holding the same label as
// their neighbours merge into the last lane of each such group, which returns true (it flushes
// the group's sums); the other lanes return false. Lanes of one label side by side are what a
// warp of consecutive segments holds inside a large source: one flush instead of up to 32
// atomics on the same addresses.
__device__ __forceinline__ bool merge_lane_groups(Run& r) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int32_t before = __shfl_up_sync(0xFFFFFFFFu, r.label, 1);
  const unsigned heads = __ballot_sync(0xFFFFFFFFu, lane == 0 || before != r.label);
  if (heads != 0xFFFFFFFFu) {  // some group has two lanes or more
    const int group_start = 31 - __clz(heads & (0xFFFFFFFFu >> (31 - lane)));
    for (int delta = 1; delta < 32; delta <<= 1) {
      const Run other = shfl_up(r, delta);
      if (lane - delta >= group_start) r.merge(other);
    }
  }
  return lane == 31 || ((heads >> (lane + 1)) & 1u) != 0;
}

// The run's sums into its label's row (a label beyond the capacity flags the overflow).
__device__ inline void flush(const Run& r, const Accumulators& a, DeviceResults* results) {
  if (r.label <= 0) return;
  const int64_t row = r.label - 1;
  if (row >= a.capacity) {
    results->catalog_overflow = 1;
    return;
  }
  atomicAdd(a.npix + row, r.npix);
  atomicAdd(a.flux + row, r.flux);
  atomicAdd(a.sum_x + row, r.sx);
  atomicAdd(a.sum_y + row, r.sy);
  atomicMax(a.peak + row, r.peak);
  atomicMin(a.xmin + row, r.xmin);
  atomicMax(a.xmax + row, r.xmax);
  atomicMin(a.ymin + row, r.ymin);
  atomicMax(a.ymax + row, r.ymax);
  a.weights.flush(row, r.w);
  a.variances.flush(row, r.v);
  if (r.flags != 0) atomicOr(a.flags + row, r.flags);
}

}  // namespace imflow::cuda::detail
