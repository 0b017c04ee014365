// SEP's rule for a dropped background mesh (one with too few usable pixels): the mean of the
// nearest valid meshes, squared distances in float as SEP; one definition for host and device.
#pragma once
#include <cstdint>

#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

struct MeshValue {
  float back;
  float sigma;
};

// back/sigma: the nx x ny mesh grid, dropped meshes marked by back <= -1e30 (SEP's -BIG).
// The value to give the mesh at (px, py); (0, 1) when no mesh is valid.
IMFLOW_HOST_DEVICE inline MeshValue fill_dropped_mesh(const float* back, const float* sigma, int64_t nx, int64_t ny,
                                                      int64_t px, int64_t py) {
  constexpr double big = 1e30;
  float best = static_cast<float>(big), val = 0.0f, sval = 0.0f;
  int64_t count = 0;
  for (int64_t y = 0, j = 0; y < ny; ++y) {
    for (int64_t x = 0; x < nx; ++x, ++j) {
      if (!(back[j] > -big)) continue;
      const float d2 = static_cast<float>(x - px) * static_cast<float>(x - px) + static_cast<float>((y - py) * (y - py));
      if (d2 < best) {
        val = back[j];
        sval = sigma[j];
        count = 1;
        best = d2;
      } else if (d2 == best) {
        val += back[j];
        sval += sigma[j];
        ++count;
      }
    }
  }
  return {count ? val / static_cast<float>(count) : 0.0f, count ? sval / static_cast<float>(count) : 1.0f};
}

}  // namespace imflow::kernels
