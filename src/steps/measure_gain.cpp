// GainSetting (measure_gain.hpp).
#include "steps/measure_gain.hpp"

#include <cctype>

#include "imflow/io/fits.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/params.hpp"

namespace imflow {

bool is_fits_keyword(const std::string& text) {
  // Up to 8 of A-Z, 0-9, '-' and '_' (CFITSIO matches names case-insensitively).
  if (text.size() > 8) return false;
  for (const char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

GainSetting GainSetting::from_params(ParamReader& params) {
  GainSetting setting;
  setting.gain = params.number("gain", 0.0, 0.0, 1e30);
  setting.keyword = params.text("gain_keyword", "");
  const bool valid = is_fits_keyword(setting.keyword);
  if (!valid) {
    params.fail(YAML::Node(), "gain_keyword",
                "'" + setting.keyword + "' is not a FITS keyword (up to 8 letters, digits, '-' or '_')");
  }
  return setting;
}

GainSetting GainSetting::from_resolved(const YAML::Node& params) {
  GainSetting setting;
  setting.gain = params["gain"].as<double>(0.0);
  setting.keyword = params["gain_keyword"].as<std::string>("");
  return setting;
}

double GainSetting::for_item(const ItemRef& ref, const std::vector<std::string>& hdu_header) const {
  if (keyword.empty()) return gain;
  if (!is_fits_input(ref.path)) return gain;
  const std::optional<double> value = read_fits_number_keyword(ref.path, ref.hdu, keyword, hdu_header);
  return value && *value > 0.0 ? *value : gain;
}

}  // namespace imflow
