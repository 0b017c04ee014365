// Step `svd_reconstruct`: thin SVD of the slice (LAPACK sgesdd), rank-k reconstruction (rank: k or
// energy: fraction), quality metrics into item.metrics; the reconstruction replaces item.pixels.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "imflow/errors.hpp"
#include "imflow/kernels/reconstruct.hpp"
#include "imflow/kernels/svd.hpp"
#include "imflow/params.hpp"
#include "steps.hpp"

namespace imflow {

namespace {
// solver / reconstruct: cpu | gpu | auto. Until the CUDA implementation lands, gpu is refused
// at pipeline load and auto means cpu.
std::string device_param(ParamReader& params, const std::string& key) {
  const std::string value = params.choice(key, "auto", {"cpu", "gpu", "auto"});
  if (value == "gpu") {
#ifdef IMFLOW_HAVE_CUDA
    params.fail(YAML::Node(), key, "gpu is not implemented yet for svd_reconstruct; use cpu or auto");
#else
    params.fail(YAML::Node(), key, "gpu was requested but this imflow was built without CUDA (IMFLOW_CUDA=OFF); use cpu or auto");
#endif
  }
  return value;
}

class SvdReconstructStep final : public Step {
 public:
  explicit SvdReconstructStep(ParamReader& params) {
    const bool has_rank = params.has("rank"), has_energy = params.has("energy");
    if (has_rank == has_energy) params.fail(YAML::Node(), "rank", "give exactly one of rank: k or energy: fraction");
    if (has_rank) rank_ = params.integer("rank", 1, 1, int64_t{1} << 30);
    if (has_energy) {
      energy_ = params.number("energy", 0.99, 0.0, 1.0);
      if (energy_ <= 0.0) params.fail(YAML::Node(), "energy", "must be > 0 and <= 1");
    }
    clip_rank_ = params.boolean("clip_rank", false);
    solver_ = device_param(params, "solver");
    reconstruct_ = device_param(params, "reconstruct");
    kernels::use_single_threaded_blas();
  }

  void run_cpu(WorkItem& item) const override {
    const ConstImageView a = item.pixels.view();
    const int64_t bad = std::count_if(a.data, a.data + a.size(), [](float x) { return !std::isfinite(x); });
    if (bad > 0) throw std::runtime_error(std::to_string(bad) + " NaN/Inf pixels: the SVD needs finite values");
    const kernels::SvdFactors f = kernels::svd_thin(a, item.scratch);
    int64_t k = rank_ > 0 ? rank_ : kernels::rank_for_energy(f.s, f.r, energy_);
    if (k > f.r) {
      if (!clip_rank_) {
        throw std::runtime_error("rank " + std::to_string(k) + " is larger than min(m, n) = " + std::to_string(f.r) +
                                 " of this " + std::to_string(f.n) + "x" + std::to_string(f.m) +
                                 " slice (set clip_rank: true to clip)");
      }
      k = f.r;
    }
    float* reconstruction = item.scratch.data();  // the A copy that sgesdd destroyed, m x n
    kernels::reconstruct_blocked(f, k, reconstruction, f.n);
    const auto metrics = kernels::reconstruction_metrics(a, {reconstruction, f.n, f.m}, f.s, f.r, k);
    item.metrics["rank"] = static_cast<double>(k);
    item.metrics["singular_values"] = static_cast<double>(f.r);
    item.metrics["sigma_1"] = f.r > 0 ? f.s[0] : 0.0;
    item.metrics["sigma_k"] = k > 0 ? f.s[k - 1] : 0.0;
    item.metrics["rel_frobenius_error"] = metrics.rel_frobenius_error;
    item.metrics["psnr_db"] = metrics.psnr_db;
    item.metrics["energy_kept"] = metrics.energy_kept;
    item.metrics["compression_ratio"] = metrics.compression_ratio;
    std::copy(reconstruction, reconstruction + f.m * f.n, item.pixels.data());
  }

 private:
  int64_t rank_ = 0;
  double energy_ = 0.0;
  bool clip_rank_ = false;
  std::string solver_, reconstruct_;
};
}  // namespace

std::unique_ptr<Step> make_svd_reconstruct_step(ParamReader& params) {
  return std::make_unique<SvdReconstructStep>(params);
}

}  // namespace imflow
