// Measured choices before the CUDA graph starts: steps that say Step::chooses_on_device() (e.g.
// svd_reconstruct's solver: auto) time their options on the first input item.
#pragma once
#include <filesystem>
#include <vector>

#include "gpu_slot.hpp"
#include "imflow/pipeline.hpp"
#include "stages.hpp"

namespace imflow {

// Reads the first of `files` (the run's input list), runs the steps before each choosing step on
// the CPU and lets the step choose on `slot` (idle; a batched trial leaves its buffers there); the
// choices go to the summary ("device_choices"). A failure is logged and leaves that step's
// default; never throws for a bad sample.
void make_device_choices(RunContext& run, const std::vector<std::filesystem::path>& files, GpuSlot& slot, int threads,
                         const EngineConfig& engine);

}  // namespace imflow
