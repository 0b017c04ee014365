// SEP's detection filters on the device (cuda/sep_filter.hpp). Compiled with --fmad=false: each
// product and sum rounds as on the CPU, in SEP's order, so the outputs are bit-identical.
#include "cuda/cuda_check.hpp"
#include "cuda/device_common.cuh"
#include "cuda/sep_filter.hpp"
#include "imflow/kernels/sep_filter.hpp"

namespace imflow::cuda {

namespace {
constexpr int kThreadsX = 32, kThreadsY = 8;

__global__ void convolve_kernel(const float* __restrict__ image, int64_t width, int64_t height, SepFilterView k,
                                float* __restrict__ out) {
  const int64_t x = static_cast<int64_t>(blockIdx.x) * kThreadsX + threadIdx.x;
  const int64_t y = static_cast<int64_t>(blockIdx.y) * kThreadsY + threadIdx.y;
  if (x >= width || y >= height) return;
  const int64_t half = k.width / 2;
  const kernels::SepFilterWindow win = kernels::sep_filter_window(y, height, k.height);
  float sum = 0.0f;
  for (int64_t cy = 0; cy < win.rows; ++cy) {
    const float* line = image + (win.y0 + cy) * width;
    const float* row = k.values + (win.first + cy) * k.width;
    for (int64_t cx = 0; cx < k.width; ++cx) {
      const int64_t sx = x + cx - half;
      if (sx >= 0 && sx < width) sum += row[cx] * line[sx];
    }
  }
  out[y * width + x] = sum;
}

__global__ void matched_kernel(const float* __restrict__ image, const float* __restrict__ noise, bool variance,
                               int64_t width, int64_t height, SepFilterView k, float* __restrict__ out) {
  const int64_t x = static_cast<int64_t>(blockIdx.x) * kThreadsX + threadIdx.x;
  const int64_t y = static_cast<int64_t>(blockIdx.y) * kThreadsY + threadIdx.y;
  if (x >= width || y >= height) return;
  const int64_t half = k.width / 2;
  const kernels::SepFilterWindow win = kernels::sep_filter_window(y, height, k.height);
  float num = 0.0f, denom = 0.0f;
  for (int64_t cy = 0; cy < win.rows; ++cy) {
    const int64_t line = (win.y0 + cy) * width;
    const float* row = k.values + (win.first + cy) * k.width;
    for (int64_t cx = 0; cx < k.width; ++cx) {
      const int64_t sx = x + cx - half;
      if (sx < 0 || sx >= width) continue;
      const float c = row[cx], n = noise[line + sx];
      const float v = variance ? n : n * n;
      if (v != 0.0f) {
        num += c * image[line + sx] / v;
        denom += c * c / v;
      }
    }
  }
  out[y * width + x] = static_cast<float>(static_cast<double>(num) / sqrt(static_cast<double>(denom)));
}

dim3 grid_of(int64_t width, int64_t height) {
  return dim3(static_cast<unsigned>((width + kThreadsX - 1) / kThreadsX),
              static_cast<unsigned>((height + kThreadsY - 1) / kThreadsY));
}
}  // namespace

void sep_convolve(const float* image, int64_t width, int64_t height, SepFilterView kernel, float* out,
                  cudaStream_t stream) {
  if (width < 1 || height < 1) return;
  convolve_kernel<<<grid_of(width, height), dim3(kThreadsX, kThreadsY), 0, stream>>>(image, width, height, kernel, out);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

void sep_matched_filter(const float* image, const float* noise, bool variance, int64_t width, int64_t height,
                        SepFilterView kernel, float* out, cudaStream_t stream) {
  if (width < 1 || height < 1) return;
  matched_kernel<<<grid_of(width, height), dim3(kThreadsX, kThreadsY), 0, stream>>>(image, noise, variance, width,
                                                                                    height, kernel, out);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
