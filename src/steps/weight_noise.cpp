// The RMS map of an item with a weight map (weight_noise.hpp).
#include "steps/weight_noise.hpp"

#include <cmath>

#include "imflow/huge_pages.hpp"
#include "imflow/kernels/weight_scale.hpp"

namespace imflow {

void set_noise_from_weight_map(WorkItem& item, const kernels::MeshParams& params, const kernels::MeshGrid& grid) {
  float factor = 1.0f;
  if (item.weight_rescale) {
    const kernels::WeightScale scale =
        kernels::weight_scale(item.detection_image().view(), item.weight_variance.data(), params, grid);
    factor = scale.factor;
    if (scale.meshes == 0) {
      item.warnings.push_back("weight map: no background mesh has a positive noise and weight; not rescaled (factor 1)");
    }
  }
  const float factor2 = factor * factor;
  const size_t n = item.weight_variance.size();
  reserve_huge_pages(item.rms_map, n);
  item.rms_map.resize(n);
  const float* variance = item.weight_variance.data();
  for (size_t i = 0; i < n; ++i) item.rms_map[i] = static_cast<float>(std::sqrt(static_cast<double>(variance[i] * factor2)));
  item.metrics["weight_scale"] = factor;
}

}  // namespace imflow
