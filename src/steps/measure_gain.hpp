// The gain (e-/ADU) of the measure step's error columns for one item: the step's `gain`, or with
// `gain_keyword` that FITS header keyword's value where the item's HDU (else the primary header)
// has a positive one. Shared by the step and the tiled engine, which measures tiles itself.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "imflow/work_item.hpp"

namespace imflow {

class ParamReader;

// A FITS keyword name as the *_keyword parameters take it: up to 8 letters, digits, '-' or '_'.
bool is_fits_keyword(const std::string& text);

struct GainSetting {
  double gain = 0.0;    // e-/ADU; 0: no Poisson term
  std::string keyword;  // empty: always `gain`

  static GainSetting from_params(ParamReader& params);        // validates and fills defaults
  static GainSetting from_resolved(const YAML::Node& params);  // Step::params() of a measure step

  // The gain for `ref`; with `keyword` set and a FITS item, the keyword from `hdu_header` (the
  // read's records, WorkItem::fits_header) or, without them, from the file's header. Throws
  // InputError when the keyword's value is not a number.
  double for_item(const ItemRef& ref, const std::vector<std::string>& hdu_header = {}) const;
};

}  // namespace imflow
