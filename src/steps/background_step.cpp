// Step `background`: kappa-sigma clipped median and std of the image (the seed lesson's method).
#include "imflow/kernels/background.hpp"
#include "imflow/params.hpp"
#include "steps.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/background.hpp"
#endif

namespace imflow {

namespace {
class BackgroundStep final : public Step {
 public:
  explicit BackgroundStep(ParamReader& params)
      : kappa_(params.number("kappa", 3.0, 1e-6, 1e6)),
        max_iters_(static_cast<int>(params.integer("max_iters", 100, 1, 100000))) {}

  void run_cpu(WorkItem& item) const override {
    item.background = kernels::kappa_sigma_clip(item.detection_image().view(), kappa_, max_iters_, item.scratch);
  }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  void run_cuda(WorkItem&, GpuContext& gpu) const override { cuda::background(gpu, kappa_, max_iters_); }
#endif

 private:
  double kappa_;
  int max_iters_;
};
}  // namespace

std::unique_ptr<Step> make_background_step(ParamReader& params) { return std::make_unique<BackgroundStep>(params); }

}  // namespace imflow
