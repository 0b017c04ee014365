// Tile items on the CUDA path: the per-item GPU steps run on the tile (core + halo); the
// background statistics are the pre-pass's, the mask is cut to the core before labelling, and
// the partial sums are accumulated on the host from the downloaded labels (the merge is on the
// host anyway, and this keeps one definition of the sums for both backends).
#include <algorithm>
#include <new>

#include "cuda/gpu_context.hpp"
#include "cuda/tile_ops.hpp"
#include "stages.hpp"
#include "tiled_image.hpp"

namespace imflow {

void tile_run_cuda(const Step& step, WorkItem& item, GpuContext& gpu) {
  const std::string& name = step.name();
  if (name == "background") {
    cuda::set_background(gpu, item.ref.tiled->background.value());
  } else if (name == "measure") {
    // measured on the host after download (tile_after_gpu)
  } else {
    if (name == "label") {
      const TileRect& core = item.ref.core;
      const TileRect& halo = item.ref.halo;
      cuda::clear_mask_outside(gpu, TileRect{core.x - halo.x, core.y - halo.y, core.width, core.height});
    }
    step.run_cuda(item, gpu);
  }
}

void tile_after_gpu(RunContext& run, WorkItem& item) {
  if (item.status == ItemStatus::failed || !item.nlabels) return;
  const auto& steps = run.pipeline.steps;
  const auto found = std::find_if(steps.begin(), steps.end(), [](const auto& step) { return step->name() == "measure"; });
  const Step* measure = found == steps.end() ? nullptr : found->get();
  StageTimer timer(run, item, measure ? "measure (host)" : "tile labels", worker_track("collect"));
  try {
    record_tile_labels(run, item, measure);
  } catch (const std::bad_alloc&) {
    item.fail(item_name(item.ref) + ": tile " + std::to_string(item.ref.tile) + ": out of memory while measuring");
  } catch (const std::exception& error) {
    item.fail(item_name(item.ref) + ": tile " + std::to_string(item.ref.tile) + ": " + error.what());
  }
}

}  // namespace imflow
