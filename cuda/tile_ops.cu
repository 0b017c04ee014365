// Tile item helpers on the device: one-thread kernel setting the background results, and
// cudaMemset2DAsync over the mask's halo rows and columns.
#include "cuda/cuda_check.hpp"
#include "cuda/tile_ops.hpp"

namespace imflow::cuda {
namespace {
__global__ void set_background_kernel(DeviceResults* results, double median, double std, long long kept,
                                      long long valid, int iterations) {
  results->median = median;
  results->std = std;
  results->kept = kept;
  results->valid = valid;
  results->iterations = iterations;
}
}  // namespace

void set_background(GpuContext& gpu, const BackgroundStats& stats) {
  DeviceGuard guard(gpu.device);
  set_background_kernel<<<1, 1, 0, gpu.stream>>>(gpu.results.data(), stats.median, stats.std, stats.kept, stats.valid,
                                                 stats.iterations);
  IMFLOW_CUDA_CHECK_LAUNCH();
  gpu.has_background = true;
}

void clear_mask_outside(GpuContext& gpu, const TileRect& core) {
  if (core.x == 0 && core.y == 0 && core.width == gpu.width && core.height == gpu.height) return;
  DeviceGuard guard(gpu.device);
  uint8_t* mask = gpu.mask.data();
  const size_t pitch = static_cast<size_t>(gpu.width);
  auto clear = [&](int64_t x, int64_t y, int64_t width, int64_t height) {
    if (width <= 0 || height <= 0) return;
    IMFLOW_CUDA_CHECK(cudaMemset2DAsync(mask + y * gpu.width + x, pitch, 0, static_cast<size_t>(width),
                                        static_cast<size_t>(height), gpu.stream));
  };
  clear(0, 0, gpu.width, core.y);                                              // rows above
  clear(0, core.y_end(), gpu.width, gpu.height - core.y_end());                // rows below
  clear(0, core.y, core.x, core.height);                                       // left columns
  clear(core.x_end(), core.y, gpu.width - core.x_end(), core.height);          // right columns
}

}  // namespace imflow::cuda
