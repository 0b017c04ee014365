// SExtractor's saturation flag (FLAGS 4) for the measure step: a source whose peak reaches the
// saturation level (`saturation`, SATUR_LEVEL; or with `saturation_keyword`, SATUR_KEY, that FITS
// header keyword's value where the item's HDU or the primary header has one) is flagged
// kFlagSaturated (the test: imflow/kernels/saturation.hpp). Without either parameter nothing is
// flagged (SEP has no such flag).
#pragma once
#include <yaml-cpp/yaml.h>

#include <limits>
#include <string>
#include <vector>

#include "imflow/source.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

class ParamReader;

struct SaturationSetting {
  double level = std::numeric_limits<double>::infinity();  // ADU; infinity: no flag
  std::string keyword;                                      // empty: always `level`

  static SaturationSetting from_params(ParamReader& params);        // validates
  static SaturationSetting from_resolved(const YAML::Node& params);  // Step::params() of a measure step

  // The level for `ref`: the keyword's value when it is set, the item is FITS and its header
  // (`hdu_header` as GainSetting::for_item takes it) holds a number under it, else `level`.
  // Throws InputError when the value is not a number.
  double for_item(const ItemRef& ref, const std::vector<std::string>& hdu_header = {}) const;
};

// Sets kFlagSaturated on the sources that reach `level` (kernels::reaches_saturation; none for
// infinity).
void flag_saturated(Catalog& catalog, double level, const float* background_map = nullptr, int64_t width = 0,
                    int64_t height = 0);

}  // namespace imflow
