// The measure step's per-label accumulators as device views: cuda/measure.cu sums the pixels
// into them, cuda/catalog_rows.cu turns them into catalog rows.
#pragma once
#include <cstdint>

#include "cuda/gpu_context.hpp"
#include "imflow/kernels/pixel_moments.hpp"

namespace imflow::cuda::detail {

// Per-label arrays of kernels::PixelMoments' six sums.
struct MomentArrays {
  double *s, *sx, *sy, *sxx, *syy, *sxy;

  __device__ void reset(int64_t r) const { s[r] = sx[r] = sy[r] = sxx[r] = syy[r] = sxy[r] = 0.0; }
  __device__ kernels::PixelMoments at(int64_t r) const { return {s[r], sx[r], sy[r], sxx[r], syy[r], sxy[r]}; }
  __device__ void flush(int64_t r, const kernels::PixelMoments& m) const {
    atomicAdd(s + r, m.s);
    atomicAdd(sx + r, m.sx);
    atomicAdd(sy + r, m.sy);
    atomicAdd(sxx + r, m.sxx);
    atomicAdd(syy + r, m.syy);
    atomicAdd(sxy + r, m.sxy);
  }
};

struct Accumulators {
  unsigned long long* npix;
  double* flux;
  double* sum_x;
  double* sum_y;
  unsigned long long* peak;  // see PeakKey in cuda/measure.cu
  unsigned long long* peak_index;
  unsigned int* xmin;
  unsigned int* xmax;
  unsigned int* ymin;
  unsigned int* ymax;
  MomentArrays weights;    // moments of w = value - background about the source's first pixel
  MomentArrays variances;  // the same of the pixel variances (kernels::pixel_variance)
  int* flags;
  unsigned long long* first;  // raster index of the label's first pixel
  int64_t capacity;
};

inline Accumulators accumulators_of(CatalogAccumulators& a, int64_t capacity) {
  const MomentArrays weights{a.flux_iso.data(), a.sum_wx.data(),  a.sum_wy.data(),
                             a.sum_wxx.data(),  a.sum_wyy.data(), a.sum_wxy.data()};
  const MomentArrays variances{a.sum_v.data(),   a.sum_vx.data(),  a.sum_vy.data(),
                               a.sum_vxx.data(), a.sum_vyy.data(), a.sum_vxy.data()};
  return {a.npix.data(), a.flux.data(), a.sum_x.data(), a.sum_y.data(), a.peak.data(), a.peak_index.data(),
          a.xmin.data(), a.xmax.data(), a.ymin.data(),  a.ymax.data(),  weights,       variances,
          a.flags.data(), a.first.data(), capacity};
}

inline Accumulators accumulators_of(GpuContext& gpu) { return accumulators_of(gpu.accumulators, gpu.catalog_capacity); }

// The rows measured: the labels, at most the capacity.
__device__ __forceinline__ int64_t valid_rows(const DeviceResults* results, int64_t capacity) {
  const int64_t n = results->nlabels;
  return n < capacity ? n : capacity;
}

// Images of 2^32 pixels or more (or the tests' forced case): `peak` holds the value's key only,
// its position is found by a second pass.
inline bool wide_peak(const GpuContext& gpu) { return gpu.force_wide_peak || gpu.size() > 0xFFFFFFFFll; }

}  // namespace imflow::cuda::detail
