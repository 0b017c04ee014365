// SEP's per-mesh background statistics on the device (twin of kernels::estimate_mesh), the first
// stage of the mesh background (cuda/background_mesh.hpp).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/gpu_context.hpp"
#include "imflow/kernels/background_mesh.hpp"

namespace imflow::cuda {

// One block per mesh of the nx x ny grid over `image` (width x height, row-major): SEP's clipped
// statistics and mode into back[mesh] / sigma[mesh] (kernels::kDroppedMesh for a dropped mesh);
// adds the kept pixels to results->valid and the dropped meshes to results->meshes_dropped (both
// zeroed by the caller). Enqueued on `stream`, never synchronizes.
void enqueue_mesh_stats(const float* image, int64_t width, int64_t height, const kernels::MeshParams& params,
                        int64_t nx, int64_t ny, float* back, float* sigma, DeviceResults* results,
                        cudaStream_t stream);

}  // namespace imflow::cuda
