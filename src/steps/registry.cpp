// The one place where steps are registered: a new step is one file in src/steps/ plus its factory
// declaration and its line in the table here.
#include <nlohmann/json.hpp>

#include "imflow/errors.hpp"
#include "imflow/params.hpp"
#include "imflow/step.hpp"

namespace imflow {

// Factories of the built-in steps, one per file in src/steps/.
std::unique_ptr<Step> make_convolve_step(ParamReader& params);
std::unique_ptr<Step> make_map_step(ParamReader& params);
std::unique_ptr<Step> make_background_step(ParamReader& params);
std::unique_ptr<Step> make_segment_step(ParamReader& params);
std::unique_ptr<Step> make_label_step(ParamReader& params);
std::unique_ptr<Step> make_measure_step(ParamReader& params);
std::unique_ptr<Step> make_normalize_step(ParamReader& params);
std::unique_ptr<Step> make_svd_reconstruct_step(ParamReader& params);
std::unique_ptr<Step> make_deblend_step(ParamReader& params);

const std::vector<StepInfo>& step_registry() {
  static const std::vector<StepInfo> registry = {
      {"convolve", "2-D convolution with a Gaussian or explicit kernel (same|full)", make_convolve_step, {}, {}},
      {"map", "replace every pixel value x by an expression in x, e.g. asinh(x / 10) * 2.5 + 1 (float32, CPU and CUDA)", make_map_step, {}, {}},
      {"background", "kappa-sigma clipped median and std, or SExtractor/SEP mesh background maps (method: mesh)", make_background_step, {}, {"background"}},
      {"segment", "threshold at median + nsigma * std (or nsigma * std; mesh: back + nsigma * rms)", make_segment_step, {"background"}, {"mask"}},
      {"label", "connected components, 4- or 8-connected, SciPy's numbering", make_label_step, {"mask"}, {"labels"}},
      {"deblend", "SExtractor/SEP multi-threshold deblending and CLEAN of 8-connected segments (minarea, nthresh, mincont), as sep.extract", make_deblend_step, {"labels"}, {"labels"}},
      {"measure", "per-source centroid, flux, npix, peak, bbox, flux_iso and its error, moments, centroid errors, ellipse, flags", make_measure_step, {"labels"}, {"catalog"}},
      {"normalize", "min-max to [0, 1] or z-score (nonfinite: zero for NaN-masked pixels), kept to undo it on output", make_normalize_step, {}, {"normalized"}},
      {"svd_reconstruct", "rank-k SVD reconstruction (rank: k or energy: fraction) and its quality metrics", make_svd_reconstruct_step, {}, {"reconstruction"}},
  };
  return registry;
}

const StepInfo* find_step(const std::string& name) {
  for (const auto& info : step_registry()) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

std::unique_ptr<Step> make_step(const std::string& name, ParamReader& params) {
  const StepInfo* info = find_step(name);
  if (info == nullptr) throw ConfigError("unknown step '" + name + "'");
  std::unique_ptr<Step> step = info->make(params);
  params.finish();
  step->name_ = name;
  step->params_ = params.resolved();
  return step;
}

void Step::run_cuda(WorkItem&, GpuContext&) const {
  throw std::runtime_error("step '" + name_ + "' has no CUDA implementation");
}

void Step::run_cuda_batch(WorkItem* const*, int, GpuBatch&) const {
  throw std::runtime_error("step '" + name_ + "' has no batched CUDA implementation");
}

std::string Step::link(const std::vector<const Step*>&) { return ""; }

std::string Step::param_text(const char* key, const std::string& fallback) const {
  const YAML::Node value = params_[key];
  return value.IsDefined() && value.IsScalar() ? value.Scalar() : fallback;
}

nlohmann::json Step::choose_on_device(WorkItem&, GpuContext&, std::unique_ptr<GpuBatch>&, int, int) const {
  return nullptr;
}

}  // namespace imflow
