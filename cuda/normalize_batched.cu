// Batched normalize (cuda/normalize_batched.hpp): per image one 512-thread block reduces
// min/max/sum/count (and for z-score the squared deviations) in double, records the mapping and
// applies it in place.
#include <cfloat>

#include "cuda/cuda_check.hpp"
#include "cuda/normalize_batched.hpp"

namespace imflow::cuda {

namespace {

constexpr int kThreads = 512;

// Block-wide reduction of four values (min, max, sum, count); the result in every thread.
__device__ void reduce4(double& lo, double& hi, double& sum, double& count) {
  __shared__ double s[4][kThreads];
  s[0][threadIdx.x] = lo;
  s[1][threadIdx.x] = hi;
  s[2][threadIdx.x] = sum;
  s[3][threadIdx.x] = count;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      s[0][threadIdx.x] = fmin(s[0][threadIdx.x], s[0][threadIdx.x + w]);
      s[1][threadIdx.x] = fmax(s[1][threadIdx.x], s[1][threadIdx.x + w]);
      s[2][threadIdx.x] += s[2][threadIdx.x + w];
      s[3][threadIdx.x] += s[3][threadIdx.x + w];
    }
    __syncthreads();
  }
  lo = s[0][0], hi = s[1][0], sum = s[2][0], count = s[3][0];
  __syncthreads();  // s may be reused by the next call
}

__global__ void normalize_batch_kernel(float* images, long long pixels, DeviceResults* results, bool zscore,
                                       bool zero_nonfinite) {
  float* image = images + blockIdx.x * pixels;
  double lo = DBL_MAX, hi = -DBL_MAX, sum = 0.0, count = 0.0;
  for (long long i = threadIdx.x; i < pixels; i += kThreads) {
    const float x = image[i];
    if (!isfinite(x)) continue;
    lo = fmin(lo, (double)x);
    hi = fmax(hi, (double)x);
    sum += x;
    count += 1.0;
  }
  reduce4(lo, hi, sum, count);
  double offset = 0.0, scale = 1.0;
  if (count > 0.0) {
    if (zscore) {
      offset = sum / count;
      double sq = 0.0, unused_lo = 0.0, unused_hi = 0.0, unused_count = 0.0;
      for (long long i = threadIdx.x; i < pixels; i += kThreads) {
        const float x = image[i];
        if (isfinite(x)) sq += (x - offset) * (x - offset);
      }
      reduce4(unused_lo, unused_hi, sq, unused_count);
      scale = sqrt(sq / count);
    } else {
      offset = lo;
      scale = hi - lo;
    }
  }
  if (threadIdx.x == 0) {
    DeviceResults& r = results[blockIdx.x];
    if (r.norm_set > 0) {  // a second normalize composes with the first, as on the CPU
      r.norm_offset = offset * r.norm_scale + r.norm_offset;
      r.norm_scale = scale * r.norm_scale;
    } else {
      r.norm_offset = offset;
      r.norm_scale = scale;
    }
    r.norm_set += 1;
  }
  unsigned long long zeroed = 0;
  for (long long i = threadIdx.x; i < pixels; i += kThreads) {
    const float x = image[i];
    if (!isfinite(x)) {
      if (zero_nonfinite) image[i] = 0.0f, ++zeroed;
      continue;
    }
    image[i] = scale == 0.0 ? 0.0f : (float)((x - offset) / scale);  // divide, as the CPU does
  }
  if (zeroed > 0) atomicAdd(&results[blockIdx.x].zeroed_pixels, zeroed);
}

}  // namespace

void normalize_batched(float* images, long long pixels, int count, DeviceResults* results, bool zscore,
                       bool zero_nonfinite, cudaStream_t stream) {
  if (count <= 0 || pixels <= 0) return;
  normalize_batch_kernel<<<count, kThreads, 0, stream>>>(images, pixels, results, zscore, zero_nonfinite);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
