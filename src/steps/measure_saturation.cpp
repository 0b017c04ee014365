// SaturationSetting and flag_saturated (measure_saturation.hpp).
#include "steps/measure_saturation.hpp"

#include <limits>

#include "imflow/io/fits.hpp"
#include "imflow/kernels/saturation.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/params.hpp"
#include "steps/measure_gain.hpp"

namespace imflow {

SaturationSetting SaturationSetting::from_params(ParamReader& params) {
  SaturationSetting setting;
  if (params.has("saturation")) setting.level = params.number("saturation", 0.0, -1e30, 1e30);
  setting.keyword = params.text("saturation_keyword", "");
  if (!is_fits_keyword(setting.keyword)) {
    params.fail(YAML::Node(), "saturation_keyword",
                "'" + setting.keyword + "' is not a FITS keyword (up to 8 letters, digits, '-' or '_')");
  }
  return setting;
}

SaturationSetting SaturationSetting::from_resolved(const YAML::Node& params) {
  SaturationSetting setting;
  if (params["saturation"]) setting.level = params["saturation"].as<double>();
  setting.keyword = params["saturation_keyword"].as<std::string>("");
  return setting;
}

double SaturationSetting::for_item(const ItemRef& ref, const std::vector<std::string>& hdu_header) const {
  if (keyword.empty() || !is_fits_input(ref.path)) return level;
  return read_fits_number_keyword(ref.path, ref.hdu, keyword, hdu_header).value_or(level);
}

void flag_saturated(Catalog& catalog, double level, const float* background_map, int64_t width, int64_t height) {
  if (!(level < std::numeric_limits<double>::infinity())) return;
  for (Source& source : catalog) {
    if (kernels::reaches_saturation(source, level, background_map, width, height)) source.flags |= kFlagSaturated;
  }
}

}  // namespace imflow
