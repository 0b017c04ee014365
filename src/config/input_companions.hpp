// The input section's companion images (input.weight, input.mask, input.flags, input.detect):
// parsing, the checks against the steps, and what `imflow validate` prints for them.
#pragma once
#include <yaml-cpp/yaml.h>

#include "imflow/params.hpp"
#include "imflow/pipeline.hpp"

namespace imflow {

// input.weight: {image, type, thresh, rescale, gain}; absent: no weight map.
WeightConfig parse_weight(ParamReader& input);
// input.mask: {image, thresh} into input.mask and input.mask_thresh; absent: no mask.
void parse_mask(ParamReader& reader, InputConfig& input);
// input.flags: {image, type: or} into input.flags; absent: no flag map.
void parse_flags(ParamReader& reader, InputConfig& input);
// input.detect: {image} into input.detect; absent: single-image mode.
void parse_detect(ParamReader& reader, InputConfig& input);

// Throws ConfigError (located at input.weight) when the steps cannot use the companions: a weight
// map needs `background` with method: mesh and `segment` with relative_to: rms_map.
void check_companions(const Pipeline& pipeline, const YAML::Node& root);

// Throws ConfigError (no location) when the steps cannot run in dual-image mode (input.detect):
// with a weight map, convolve's apply_to: image, map or normalize.
void check_dual_image(const Pipeline& pipeline);

// input.weight and input.mask with their defaults filled in, into the resolved `input` node.
void resolve_companions(const InputConfig& input, YAML::Node input_node);

}  // namespace imflow
