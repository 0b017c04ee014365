// Factories of the built-in steps, one per file in src/steps/, listed in registry.cpp.
#pragma once
#include <memory>

#include "imflow/step.hpp"

namespace imflow {

std::unique_ptr<Step> make_convolve_step(ParamReader& params);
std::unique_ptr<Step> make_background_step(ParamReader& params);
std::unique_ptr<Step> make_segment_step(ParamReader& params);
std::unique_ptr<Step> make_label_step(ParamReader& params);
std::unique_ptr<Step> make_measure_step(ParamReader& params);
std::unique_ptr<Step> make_normalize_step(ParamReader& params);
std::unique_ptr<Step> make_svd_reconstruct_step(ParamReader& params);

}  // namespace imflow
