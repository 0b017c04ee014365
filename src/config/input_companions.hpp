// The input section's companion images (input.weight, input.mask, input.flags, input.detect):
// parsing, the checks against the steps, and what `imflow validate` prints for them.
#pragma once
#include <yaml-cpp/yaml.h>

#include "imflow/params.hpp"
#include "imflow/pipeline.hpp"

namespace imflow {

// `section`.weight: {image, type, thresh, rescale, gain}; absent: no weight map. `detection`:
// input.detect.weight, the detection image's map (no `gain` key).
WeightConfig parse_weight(ParamReader& section, bool detection = false);
// input.mask: {image, thresh} into input.mask and input.mask_thresh; absent: no mask.
void parse_mask(ParamReader& reader, InputConfig& input);
// input.flags: {image, type: or} into input.flags; absent: no flag map.
void parse_flags(ParamReader& reader, InputConfig& input);
// input.detect: {image, weight} into input.detect and input.detect_weight; absent: single-image mode.
void parse_detect(ParamReader& reader, InputConfig& input);

// Throws ConfigError (located at the key) when the steps cannot use the companions: a weight map
// needs `background` with method: mesh and, where it sets the threshold (input.weight outside
// dual-image mode, input.detect.weight), `segment` with relative_to: rms_map.
void check_companions(const Pipeline& pipeline, const YAML::Node& root);

// Throws ConfigError (no location) when the steps cannot run in dual-image mode (input.detect):
// convolve's apply_to: image, map or normalize.
void check_dual_image(const Pipeline& pipeline);

// input.weight, input.detect.weight and input.mask with their defaults filled in, into the resolved `input` node.
void resolve_companions(const InputConfig& input, YAML::Node input_node);

}  // namespace imflow
