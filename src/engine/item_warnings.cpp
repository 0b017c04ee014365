// add_result_warnings (item_warnings.hpp).
#include "item_warnings.hpp"

#include <spdlog/spdlog.h>

#include "stages.hpp"

namespace imflow {

void add_result_warnings(WorkItem& item) {
  // segment's threshold is nsigma x the background's noise: with a noise of 0 (a constant or
  // quantized plane: an HST data-quality array, an X-ray counts image, a noise-free simulation)
  // the threshold is the reference level itself and every pixel above it is detected.
  if ((item.segment_threshold || item.threshold) && item.background && item.background->std == 0.0) {
    item.warnings.push_back(
        "the background's noise estimate is 0 (constant or quantized data, e.g. a data-quality or counts plane): the "
        "threshold is the background level itself (0 with relative_to: zero) and every pixel above it was detected; "
        "select the science planes (input.extnames, --extname) or check the data");
  }
  for (const std::string& warning : item.warnings) spdlog::warn("{}: {}", item_name(item.ref), warning);
}

}  // namespace imflow
