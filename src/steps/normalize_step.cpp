// Step `normalize`: min-max to [0, 1] (the intended (im - min) / (max - min)) or z-score;
// remembers the mapping in item.normalization so outputs can be written in the original range.
// `nonfinite: zero` then sets NaN/Inf pixels (masked voxels) to 0, counted in
// item.metrics["zeroed_pixels"]; `keep` (default) leaves them.
#include "imflow/kernels/normalize.hpp"
#include "imflow/params.hpp"
#include "imflow/step.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/gpu_batch.hpp"
#include "cuda/normalize.hpp"
#include "cuda/normalize_batched.hpp"
#endif

namespace imflow {

namespace {
class NormalizeStep final : public Step {
 public:
  explicit NormalizeStep(ParamReader& params)
      : method_(params.choice("method", "minmax", {"minmax", "zscore"}) == "minmax" ? kernels::NormalizeMethod::minmax
                                                                                  : kernels::NormalizeMethod::zscore),
        zero_nonfinite_(params.choice("nonfinite", "keep", {"keep", "zero"}) == "zero") {}

  void run_cpu(WorkItem& item) const override {
    const Normalization step = kernels::normalize(item.pixels.view(), method_);
    if (item.normalization) {  // normalized twice: compose, original = (x * s2 + o2) * s1 + o1
      const Normalization first = *item.normalization;
      item.normalization = Normalization{step.offset * first.scale + first.offset, step.scale * first.scale};
    } else {
      item.normalization = step;
    }
    if (!zero_nonfinite_) return;
    const int64_t zeroed = kernels::zero_nonfinite(item.pixels.view());
    if (zeroed > 0) item.metrics["zeroed_pixels"] += static_cast<double>(zeroed);
  }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  void run_cuda(WorkItem&, GpuContext& gpu) const override {
    cuda::normalize(gpu, method_ == kernels::NormalizeMethod::zscore, zero_nonfinite_);
  }
  bool has_cuda_batch() const override { return true; }
  void run_cuda_batch(WorkItem* const*, int count, GpuBatch& batch) const override {
    cuda::normalize_batched(batch.images.data(), batch.pixels(), count, batch.results.data(),
                            method_ == kernels::NormalizeMethod::zscore, zero_nonfinite_, batch.stream);
    batch.has_normalization = batch.image_modified = true;
  }
#endif

 private:
  kernels::NormalizeMethod method_;
  bool zero_nonfinite_;
};
}  // namespace

std::unique_ptr<Step> make_normalize_step(ParamReader& params) { return std::make_unique<NormalizeStep>(params); }

}  // namespace imflow
