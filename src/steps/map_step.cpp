// Step `map`: replaces every pixel value x by an expression in x, e.g. asinh(x / 10) * 2.5 + 1,
// compiled once when the pipeline is loaded (an invalid expression is a config error naming its
// column) and run in float32 by the same program on the CPU and the GPU (docs/pipeline.md).
#include "imflow/kernels/map.hpp"
#include "imflow/kernels/map_expression.hpp"
#include "imflow/params.hpp"
#include "imflow/step.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/gpu_batch.hpp"
#include "cuda/map.hpp"
#endif

namespace imflow {

namespace {
class MapStep final : public Step {
 public:
  explicit MapStep(ParamReader& params) {
    if (!params.has("expression")) {
      params.fail(YAML::Node(), "expression", "required: an expression in the pixel value x, e.g. \"asinh(x / 10)\"");
    }
    const YAML::Node node = params.child("expression");  // its position, for errors
    const std::string text = params.text("expression", "");
    try {
      program_ = kernels::compile_map_expression(text);
    } catch (const kernels::MapExpressionError& error) {
      params.fail(node, "expression", error.what());
    }
  }

  void run_cpu(WorkItem& item) const override { kernels::apply_map(program_, item.pixels.view()); }

#ifdef IMFLOW_HAVE_CUDA
  bool has_cuda() const override { return true; }
  void run_cuda(WorkItem&, GpuContext& gpu) const override { cuda::map(gpu, program_); }
  // Pixel by pixel, so the batch's contiguous images are one array.
  bool has_cuda_batch() const override { return true; }
  void run_cuda_batch(WorkItem* const*, int count, GpuBatch& batch) const override {
    cuda::map_values(batch.images.data(), batch.pixels() * count, program_, batch.stream);
    batch.image_modified = true;
  }
#endif

 private:
  kernels::MapProgram program_;
};
}  // namespace

std::unique_ptr<Step> make_map_step(ParamReader& params) { return std::make_unique<MapStep>(params); }

}  // namespace imflow
