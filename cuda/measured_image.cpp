// The measured image's own background in dual-image mode (cuda/measured_image.hpp).
#include "cuda/measured_image.hpp"

#include "cuda/background.hpp"

namespace imflow::cuda {

void measured_image_background(GpuContext& gpu, const kernels::MeshParams* mesh, double kappa, int max_iters) {
  MeasuredImageState& m = *gpu.measured;
  m.results.reserve(1);
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(m.results.data(), 0, sizeof(DeviceResults), gpu.stream));
  if (mesh != nullptr) {
    background_mesh_of(gpu, *mesh, gpu.image.data(), m.maps, m.results.data());
  } else {
    background_of(gpu, kappa, max_iters, gpu.image.data(), m.results.data());
  }
  m.has_background = true;
  m.has_maps = mesh != nullptr;
}

}  // namespace imflow::cuda
