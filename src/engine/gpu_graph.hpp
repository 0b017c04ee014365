// The CUDA flow graph: reader -> (item, free slot) -> async GPU stage (upload, steps, download
// on the slot's stream; completion by stream callback) -> collect -> writer.
#pragma once
#include <vector>

#include "imflow/pipeline.hpp"
#include "item_source.hpp"
#include "stages.hpp"

namespace imflow {

// Number of usable CUDA devices (0 without driver or device; never throws).
int cuda_devices_available();

// The GPUs a run uses: engine.devices, or every one. Throws ConfigError naming a listed device
// that does not exist.
std::vector<int> chosen_devices(const EngineConfig& engine);

// Runs the pipeline's steps on the GPUs `devices` with engine.streams slots per GPU and
// engine.buffers_per_stream pinned work items per slot.
void run_gpu_graph(RunContext& run, ItemSource& source, int threads, const EngineConfig& engine);

}  // namespace imflow
