// A GPU warp as a pixel team (imflow/kernels/pixel_team.hpp): its 32 lanes share one source's
// aperture pixels and combine their partial sums with butterfly shuffles, which leave every lane
// the same value. Every lane of the warp must call sum() and bit_or() together.
#pragma once
#include <cstdint>

#include "imflow/kernels/host_device.hpp"

namespace imflow::cuda {

struct WarpTeam {
  static constexpr int size = 32;
  static constexpr unsigned kAllLanes = 0xffffffffu;
  // Host versions exist only so the host side of the shared templates compiles; they never run.
  IMFLOW_HOST_DEVICE static int rank() {
#ifdef __CUDA_ARCH__
    return static_cast<int>(threadIdx.x) & (size - 1);
#else
    return 0;
#endif
  }
  // The sum over the warp, or with Width < 32 over each group of Width lanes (lanes 0..Width-1, ...).
  template <int Width = size, typename T>
  IMFLOW_HOST_DEVICE static T sum(T v) {
    static_assert(Width > 0 && Width <= size && (Width & (Width - 1)) == 0, "a power of two up to the warp");
#ifdef __CUDA_ARCH__
    for (int lanes = Width / 2; lanes > 0; lanes /= 2) v += __shfl_xor_sync(kAllLanes, v, lanes, Width);
#endif
    return v;
  }
  IMFLOW_HOST_DEVICE static int32_t bit_or(int32_t v) {
#ifdef __CUDA_ARCH__
    return static_cast<int32_t>(__reduce_or_sync(kAllLanes, static_cast<unsigned>(v)));
#else
    return v;
#endif
  }
};

}  // namespace imflow::cuda
