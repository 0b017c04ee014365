// SEP 1.4.1's detection filters on the device (twins of kernels::sep_convolve and
// kernels::sep_matched_filter): one thread per output pixel, the same float32 sums in the same
// order (kernel row by row, entry by entry), compiled without FMA so the results are the CPU's bits.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace imflow::cuda {

// A normalised filter kernel on the device (kernels::sep_filter_kernel's values).
struct SepFilterView {
  const float* values = nullptr;  // height rows of width entries
  int64_t width = 0, height = 0;
};

// out = SEP's convolve() of `image` (width x height, device; `out` may not alias it).
void sep_convolve(const float* image, int64_t width, int64_t height, SepFilterView kernel, float* out,
                  cudaStream_t stream);

// out = SEP's matched_filter() of `image` with the per-pixel noise (`variance`: it holds the
// variance, else the standard deviation).
void sep_matched_filter(const float* image, const float* noise, bool variance, int64_t width, int64_t height,
                        SepFilterView kernel, float* out, cudaStream_t stream);

}  // namespace imflow::cuda
