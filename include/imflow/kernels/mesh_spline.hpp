// The natural cubic spline through a mesh's nodes (SEP's makebackspline), in float as SEP: one
// definition for the host (src/kernels/background_mesh.cpp) and the CUDA mesh background.
#pragma once
#include <cstdint>

#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

// The second derivatives at `count` nodes `stride` apart into second[k * stride] (all zero for
// fewer than 3 nodes); `u` is scratch for `count` floats.
IMFLOW_HOST_DEVICE inline void spline_second_derivatives(const float* values, int64_t count, int64_t stride,
                                                         float* second, float* u) {
  if (count < 2) {
    if (count == 1) second[0] = 0.0f;
    return;
  }
  second[0] = u[0] = 0.0f;
  for (int64_t k = 1; k < count - 1; ++k) {
    float temp = -1 / (second[(k - 1) * stride] + 4);
    second[k * stride] = temp;
    temp *= u[k - 1] - 6 * (values[(k + 1) * stride] + values[(k - 1) * stride] - 2 * values[k * stride]);
    u[k] = temp;
  }
  second[(count - 1) * stride] = 0.0f;
  for (int64_t k = count - 2; k >= 1; --k) {
    second[k * stride] = static_cast<float>((second[k * stride] * second[(k + 1) * stride] + u[k]) / 6.0);
  }
}

}  // namespace imflow::kernels
