// A warp's walk over an object's pixels in SEP's order for the GPU deblending (cuda/deblend_sep.hpp),
// host and device: the pixels loaded several chunks at a time, what does not depend on their
// order combined across the lanes, and float64 sums taken in their order.
#pragma once
#include <cstdint>

#include "cuda/deblend_team.hpp"
#include "imflow/kernels/host_device.hpp"

namespace imflow::cuda::deblend_detail {

// The image as the deblending reads it: detection (SEP's cdvalue), measurement (value) and
// threshold (per pixel or one value), row-major with `width` columns.
struct Pixels {
  const float* cd = nullptr;
  const float* value = nullptr;   // never null (the detection when there is no measurement image)
  const float* thresh = nullptr;  // null: `thresh0` everywhere
  float thresh0 = 0.0f;
  int32_t width = 0;
  IMFLOW_HOST_DEVICE float threshold(int32_t i) const { return thresh != nullptr ? thresh[i] : thresh0; }
};

// Chunks of team.size pixels whose loads are issued together: a lone warp walking a large object
// would otherwise wait on each chunk's dependent loads (its index, then its values) in turn.
constexpr int kChunksInFlight = 4;

// Calls chunk(start, count, x, y, a, b) on every lane of the team for pixels 0..n-1, team.size
// at a time in order: lane l holds pixel start + l when l < count (px(i): the image index of the
// i-th; load(p, a, b): its two values).
template <class TeamT, class PixelAt, class Load, class Chunk>
IMFLOW_HOST_DEVICE void for_each_chunk(const TeamT& team, const Pixels& im, const PixelAt& px, int64_t n, Load&& load,
                                       Chunk&& chunk) {
  const int64_t group = static_cast<int64_t>(kChunksInFlight) * team.size;
  for (int64_t base = 0; base < n; base += group) {
    int32_t x[kChunksInFlight], y[kChunksInFlight];
    float a[kChunksInFlight], b[kChunksInFlight];
    IMFLOW_DEVICE_UNROLL
    for (int q = 0; q < kChunksInFlight; ++q) {
      const int64_t i = base + q * team.size + team.lane;
      x[q] = y[q] = 0;
      a[q] = b[q] = 0.0f;
      if (i < n) {
        const int32_t p = px(i);
        y[q] = p / im.width;
        x[q] = p - y[q] * im.width;
        load(p, a[q], b[q]);
      }
    }
    IMFLOW_DEVICE_UNROLL
    for (int q = 0; q < kChunksInFlight; ++q) {
      const int64_t start = base + q * team.size;
      if (start >= n) break;
      const int count = static_cast<int>(n - start < team.size ? n - start : team.size);
      chunk(start, count, x[q], y[q], a[q], b[q]);
    }
  }
}

// step(j) for a chunk's lanes j = 0..count-1 in order; a whole warp's chunk by an unrolled loop,
// so that the reads of its terms overlap.
template <class Step>
IMFLOW_HOST_DEVICE void in_lane_order(int count, Step&& step) {
  if (count == 32) {
    IMFLOW_DEVICE_UNROLL
    for (int j = 0; j < 32; ++j) step(j);
  } else {
    for (int j = 0; j < count; ++j) step(j);
  }
}

// op over every lane's v (an associative and commutative op); every lane gets it.
template <class TeamT, class T, class Op>
IMFLOW_HOST_DEVICE T team_reduce(const TeamT& team, T v, Op op) {
  for (int m = 1; m < team.size; m <<= 1) v = op(v, team.shfl(v, team.lane ^ m));
  return v;
}

// The first, in pixel order, of the values equal to the largest: what SEP's `if (peak < v) peak =
// v` leaves from `start`. Each lane keeps its own pixels' first largest and its index, then the
// team takes the largest, the smaller index among equal ones.
struct FirstMax {
  float value;
  int64_t index = INT64_MAX;
  IMFLOW_HOST_DEVICE explicit FirstMax(float start) : value(start) {}
  IMFLOW_HOST_DEVICE void add(float v, int64_t i) {
    if (value < v) {
      value = v;
      index = i;
    }
  }
  template <class TeamT>
  IMFLOW_HOST_DEVICE float result(const TeamT& team) const {
    float v = value;
    int64_t i = index;
    for (int m = 1; m < team.size; m <<= 1) {
      const float other = team.shfl(v, team.lane ^ m);
      const int64_t other_index = team.shfl(i, team.lane ^ m);
      if (v < other || (!(other < v) && other_index < i)) {
        v = other;
        i = other_index;
      }
    }
    return v;
  }
};

// K float64 sums of float terms, one term of each per pixel, taken in pixel order (SEP's
// rounding). On a warp each chunk's terms are staged in team.stage (kStageFloats floats of shared
// memory) and lane k adds sum k: the K chains of dependent additions run side by side. On the
// host the one lane adds them all.
constexpr int kStageRow = 33;  // one row per sum: the lanes adding one column read distinct banks
constexpr int kMaxOrderedSums = 5;
constexpr int kStageFloats = kMaxOrderedSums * kStageRow;

template <int K>
class OrderedSums {
  static_assert(K <= kMaxOrderedSums);

 public:
  // Adds the chunk's terms: terms[k] of lanes 0..count-1, in lane order.
  template <class TeamT>
  IMFLOW_HOST_DEVICE void add(const TeamT& team, int count, const float (&terms)[K]) {
#ifdef __CUDA_ARCH__
    IMFLOW_DEVICE_UNROLL
    for (int k = 0; k < K; ++k) team.stage[k * kStageRow + team.lane] = terms[k];
    __syncwarp();
    if (team.lane < K) {
      const float* row = team.stage + team.lane * kStageRow;
      in_lane_order(count, [&](int j) { own_ += row[j]; });
    }
    __syncwarp();
#else
    (void)team;
    (void)count;  // one lane: one term of each
    for (int k = 0; k < K; ++k) sums_[k] += terms[k];
#endif
  }
  // Sum k, on every lane.
  template <class TeamT>
  IMFLOW_HOST_DEVICE double sum(const TeamT& team, int k) const {
#ifdef __CUDA_ARCH__
    return team.shfl(own_, k);
#else
    (void)team;
    return sums_[k];
#endif
  }

 private:
#ifdef __CUDA_ARCH__
  double own_ = 0.0;
#else
  double sums_[K] = {};
#endif
};

}  // namespace imflow::cuda::deblend_detail
