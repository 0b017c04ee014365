// The RMS map of an image with a weight map (weight_noise.hpp).
#include "steps/weight_noise.hpp"

#include <cmath>

#include "imflow/huge_pages.hpp"
#include "imflow/kernels/weight_scale.hpp"

namespace imflow {

std::string weight_not_rescaled_warning(const std::string& role) {
  return role + ": no background mesh has a positive noise and weight; not rescaled (factor 1)";
}

float weight_rms_map(ConstImageView image, const std::vector<float>& variance, bool rescale,
                     const kernels::MeshParams& params, const kernels::MeshGrid& grid, std::vector<float>& rms,
                     const std::string& role, std::vector<std::string>& warnings) {
  float factor = 1.0f;
  if (rescale) {
    const kernels::WeightScale scale = kernels::weight_scale(image, variance.data(), params, grid);
    factor = scale.factor;
    if (scale.meshes == 0) warnings.push_back(weight_not_rescaled_warning(role));
  }
  const float factor2 = factor * factor;
  const size_t n = variance.size();
  reserve_huge_pages(rms, n);
  rms.resize(n);
  for (size_t i = 0; i < n; ++i) rms[i] = static_cast<float>(std::sqrt(static_cast<double>(variance[i] * factor2)));
  return factor;
}

}  // namespace imflow
