// Step `background`: kappa-sigma clipped median and std of the image (method: global, the seed
// lesson's method), or SExtractor/SEP's mesh background with per-pixel maps (method: mesh).
#include <memory>

#include "imflow/huge_pages.hpp"
#include "imflow/kernels/background.hpp"
#include "imflow/kernels/background_histogram.hpp"
#include "imflow/kernels/background_mesh.hpp"
#include "imflow/params.hpp"
#include "imflow/step.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/background.hpp"
#include "cuda/background_mesh.hpp"
#endif

namespace imflow {

namespace {
constexpr int64_t kStreamingFromPixels = int64_t{1} << 20;

class BackgroundStep final : public Step {
 public:
  explicit BackgroundStep(ParamReader& params)
      : mesh_(params.choice("method", "global", {"global", "mesh"}) == "mesh") {
    if (mesh_) {  // only the chosen method's keys are read: the other's are reported as unknown
      const int64_t size = params.integer("size", 64, 2, int64_t{1} << 20);
      const int64_t filter = params.integer("filter_size", 3, 1, kernels::kMaxMeshFilterSize);
      mesh_params_.mesh_width = mesh_params_.mesh_height = size;
      mesh_params_.filter_width = mesh_params_.filter_height = filter;
      mesh_params_.filter_threshold = params.number("filter_threshold", 0.0, 0.0, 1e30);
    } else {
      kappa_ = params.number("kappa", 3.0, 1e-6, 1e6);
      max_iters_ = static_cast<int>(params.integer("max_iters", 100, 1, 100000));
    }
  }

  void run_cpu(WorkItem& item) const override {
    if (mesh_) {  // the RMS map stays a grid: segment evaluates it row by row (no full-size map)
      auto grid = std::make_shared<kernels::MeshGrid>();
      reserve_huge_pages(item.background_map, static_cast<size_t>(item.detection_image().size()));
      item.background = kernels::mesh_background(item.detection_image().view(), mesh_params_, item.background_map, *grid);
      item.rms_map.clear();
      item.mesh_grid = std::move(grid);
    } else {
      const ConstImageView image = item.detection_image().view();
      // From 1 Mpix on, radix histograms (a few passes over the pixels, where the clip selects a
      // median per iteration): the same median, iterations and counts, the std to float64
      // rounding, ~9x faster on a 2048x2048 frame; below, the histograms' fixed cost dominates.
      item.background = image.size() >= kStreamingFromPixels
                            ? kernels::streaming_kappa_sigma(image, kappa_, max_iters_, image.height)
                            : kernels::kappa_sigma_clip(image, kappa_, max_iters_, item.scratch);
    }
  }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  void run_cuda(WorkItem&, GpuContext& gpu) const override {
    if (mesh_) {
      cuda::background_mesh(gpu, mesh_params_);
    } else {
      cuda::background(gpu, kappa_, max_iters_);
    }
  }
#endif

 private:
  bool mesh_;
  double kappa_ = 3.0;
  int max_iters_ = 100;
  kernels::MeshParams mesh_params_;
};
}  // namespace

std::unique_ptr<Step> make_background_step(ParamReader& params) { return std::make_unique<BackgroundStep>(params); }

}  // namespace imflow
