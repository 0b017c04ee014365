// input.weight and input.mask (input_companions.hpp): SExtractor's WEIGHT_TYPE, WEIGHT_THRESH and
// RESCALE_WEIGHTS as pipeline keys, checked against the steps that use the weight map; SEP's mask;
// FLAG_IMAGE.
#include "input_companions.hpp"

#include <algorithm>
#include <optional>

#include "imflow/errors.hpp"

namespace imflow {

namespace {
const char* type_name(WeightType type) {
  switch (type) {
    case WeightType::map_rms: return "map_rms";
    case WeightType::map_var: return "map_var";
    case WeightType::map_weight: return "map_weight";
  }
  return "";
}

const char* flag_type_name(kernels::FlagType type) {
  switch (type) {
    case kernels::FlagType::bit_or: return "or";
    case kernels::FlagType::bit_and: return "and";
    case kernels::FlagType::minimum: return "min";
    case kernels::FlagType::maximum: return "max";
    case kernels::FlagType::most: return "most";
  }
  return "";
}

// The map under `key` of the input section (nullopt when absent), its `image` read into `spec`:
// the reader of its other keys, to be finished by the caller.
std::optional<ParamReader> companion_section(ParamReader& input, const char* key, CompanionSpec& spec, const char* example) {
  if (!input.has(key)) return std::nullopt;
  const YAML::Node node = input.child(key);
  if (!node.IsMap()) input.fail(node, key, std::string("expected {image: <file pattern or EXTNAME>, ...}, e.g. ") + example);
  ParamReader reader(node, input.where() + "." + key, input.file());
  spec.image = reader.text("image", "");
  if (spec.image.empty()) reader.fail(node, "image", "the " + spec.role + " needs image: a file pattern or an EXTNAME, e.g. " + example);
  return reader;
}
// A weight map's resolved keys (`gain` for the measured image's map only).
YAML::Node weight_node(const WeightConfig& weight, bool measured) {
  YAML::Node node;
  node["image"] = weight.map.image;
  node["type"] = type_name(weight.type);
  if (weight.thresh) node["thresh"] = *weight.thresh;
  node["rescale"] = weight.rescale;
  if (measured) node["gain"] = weight.gain;
  return node;
}

// The steps a weight map needs: noise from the map (not measure's noise: global), the mesh
// background it is rescaled against, and with `sets_threshold` (the detection image's map) a
// per-pixel threshold.
void check_weight_steps(const Pipeline& pipeline, const std::string& where, bool sets_threshold) {
  for (const auto& step : pipeline.steps) {
    if (step->name() == "measure" && step->param_text("noise", "map") == "global") {
      throw ConfigError(where + "a weight map gives each pixel its noise: measure's noise: global (SExtractor's "
                                "WEIGHT_TYPE NONE) does not apply");
    }
  }
  bool mesh = false, rms_map = false;
  for (const auto& step : pipeline.steps) {
    if (step->name() == "background") mesh = step->param_text("method", "global") == "mesh";
    if (step->name() == "segment") rms_map = step->param_text("relative_to", "background") == "rms_map";
  }
  if (!mesh) throw ConfigError(where + "a weight map is scaled against the mesh background: it needs the background step with method: mesh");
  if (sets_threshold && !rms_map) {
    throw ConfigError(where + "a weight map sets the threshold per pixel: it needs the segment step with relative_to: rms_map");
  }
}
}  // namespace

WeightConfig parse_weight(ParamReader& section, bool detection) {
  WeightConfig weight;
  if (detection) weight.map.role = "detection weight map";
  const char* example = detection ? "{image: '../r/{stem}.weight.fits', type: map_weight}"
                                  : "{image: '{stem}.weight.fits', type: map_weight}";
  std::optional<ParamReader> reader = companion_section(section, "weight", weight.map, example);
  if (!reader) return weight;
  if (!reader->has("type")) reader->fail(YAML::Node(), "type", "a weight map needs type: map_rms, map_var or map_weight (SExtractor's WEIGHT_TYPE)");
  const std::string type = reader->choice("type", "map_weight", {"map_rms", "map_var", "map_weight"});
  weight.type = type == "map_rms" ? WeightType::map_rms : type == "map_var" ? WeightType::map_var : WeightType::map_weight;
  if (reader->has("thresh")) weight.thresh = reader->number("thresh", 0.0, 0.0, 1e30);
  weight.rescale = reader->boolean("rescale", weight.type != WeightType::map_rms);
  if (weight.rescale && weight.type == WeightType::map_rms) {
    reader->fail(reader->child("rescale"), "rescale", "an RMS map is used as it is (SExtractor rescales variance and weight maps only)");
  }
  if (detection && reader->has("gain")) {
    reader->fail(reader->child("gain"), "gain", "WEIGHT_GAIN scales the errors of the measured image: set it in input.weight");
  }
  weight.gain = !detection && reader->boolean("gain", true);
  reader->finish();
  return weight;
}

void parse_mask(ParamReader& reader, InputConfig& input) {
  std::optional<ParamReader> mask = companion_section(reader, "mask", input.mask, "{image: '{stem}.mask.fits', thresh: 0}");
  if (!mask) return;
  input.mask_thresh = mask->number("thresh", 0.0, -1e30, 1e30);
  mask->finish();
}

void parse_flags(ParamReader& reader, InputConfig& input) {
  std::optional<ParamReader> flags = companion_section(reader, "flags", input.flags, "{image: DQ, type: or}");
  if (!flags) return;
  const std::string type = flags->choice("type", "or", {"or", "and", "min", "max", "most"});  // SExtractor's FLAG_TYPE
  input.flag_type = type == "and"   ? kernels::FlagType::bit_and
                    : type == "min" ? kernels::FlagType::minimum
                    : type == "max" ? kernels::FlagType::maximum
                    : type == "most" ? kernels::FlagType::most
                                     : kernels::FlagType::bit_or;
  flags->finish();
}

void parse_detect(ParamReader& reader, InputConfig& input) {
  std::optional<ParamReader> detect = companion_section(reader, "detect", input.detect, "{image: '../r/{stem}.fits'}");
  if (!detect) return;
  input.detect_weight = parse_weight(*detect, true);
  detect->finish();
}

void check_companions(const Pipeline& pipeline, const YAML::Node& root) {
  if (pipeline.input.flags.present()) {
    const bool measure = std::any_of(pipeline.steps.begin(), pipeline.steps.end(), [](const auto& s) { return s->name() == "measure"; });
    if (!measure) throw ConfigError(yaml_location(pipeline.source, root["input"]["flags"]) + "input.flags: a flag map is read into the catalog: it needs the measure step");
  }
  if (pipeline.input.detect.present()) {
    try {
      check_dual_image(pipeline);
    } catch (const ConfigError& error) {
      throw ConfigError(yaml_location(pipeline.source, root["input"]["detect"]) + error.what());
    }
  }
  const bool dual = pipeline.input.detect.present();
  if (pipeline.input.weight.present()) check_weight_steps(pipeline, yaml_location(pipeline.source, root["input"]["weight"]) + "input.weight: ", !dual);
  if (pipeline.input.detect_weight.present()) {
    check_weight_steps(pipeline, yaml_location(pipeline.source, root["input"]["detect"]["weight"]) + "input.detect.weight: ", true);
  }
}

void check_dual_image(const Pipeline& pipeline) {
  if (!pipeline.input.detect.present()) return;
  for (const auto& step : pipeline.steps) {
    if (step->name() == "convolve" && step->param_text("apply_to", "detection") == "image") {
      throw ConfigError("input.detect: convolve with apply_to: image would replace the measurement image by the filtered "
                        "detection image (use apply_to: detection)");
    }
    if (step->name() == "map" || step->name() == "normalize") {
      throw ConfigError("input.detect: step '" + step->name() + "' changes the measurement image only; dual-image "
                        "mode runs the astronomy steps (convolve, background, segment, label, deblend, measure)");
    }
  }
}

void resolve_companions(const InputConfig& input, YAML::Node input_node) {
  if (input.detect.present()) input_node["detect"]["image"] = input.detect.image.empty() ? input.detect.tree.string() : input.detect.image;
  if (input.detect_weight.present()) input_node["detect"]["weight"] = weight_node(input.detect_weight, false);
  if (input.flags.present()) {
    input_node["flags"]["image"] = input.flags.image;
    input_node["flags"]["type"] = flag_type_name(input.flag_type);
  }
  if (input.mask.present()) {
    input_node["mask"]["image"] = input.mask.image;
    input_node["mask"]["thresh"] = input.mask_thresh;
  }
  if (input.weight.present()) input_node["weight"] = weight_node(input.weight, true);
}

}  // namespace imflow
