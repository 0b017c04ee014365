// Step `label`: connected components of the segmentation mask (connectivity 4 or 8), those of
// fewer than `minarea` pixels dropped (SExtractor's DETECT_MINAREA, SEP's minarea; default 1).
#include "imflow/huge_pages.hpp"
#include "imflow/kernels/label.hpp"
#include "imflow/params.hpp"
#include "imflow/step.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/label.hpp"
#endif

namespace imflow {

namespace {
class LabelStep final : public Step {
 public:
  explicit LabelStep(ParamReader& params)
      : connectivity_(static_cast<int>(params.integer("connectivity", 4, 4, 8))),
        minarea_(params.integer("minarea", 1, 1, int64_t{1} << 31)) {
    if (connectivity_ != 4 && connectivity_ != 8) params.fail(params.child("connectivity"), "connectivity", "must be 4 or 8");
  }

  void run_cpu(WorkItem& item) const override {
    const ImageBuffer& image = item.detection_image();
    reserve_huge_pages(item.labels, static_cast<size_t>(image.size()));
    item.labels.clear();  // then resize value-initialises every label to 0
    item.labels.resize(static_cast<size_t>(image.size()));
    item.nlabels = kernels::label_components({item.mask.data(), image.width(), image.height()}, connectivity_,
                                             item.labels.data(), /*labels_zeroed=*/true, minarea_);
  }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  void run_cuda(WorkItem&, GpuContext& gpu) const override { cuda::label(gpu, connectivity_, minarea_); }
#endif

 private:
  int connectivity_;
  int64_t minarea_;
};
}  // namespace

std::unique_ptr<Step> make_label_step(ParamReader& params) { return std::make_unique<LabelStep>(params); }

}  // namespace imflow
