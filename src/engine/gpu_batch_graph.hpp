// The CUDA flow graph in batch mode (engine option `batch` > 1, every step batchable): read
// items are grouped by shape into batches of up to `batch`; a batch takes one slot (one upload,
// each step once for the whole batch, one download) and its items then go to the writer.
#pragma once
#include <memory>
#include <vector>

#include "gpu_overlap.hpp"
#include "gpu_slot.hpp"
#include "imflow/pipeline.hpp"
#include "item_source.hpp"
#include "stages.hpp"

namespace imflow {

// Whether run_gpu_graph should batch this pipeline: batch > 1 and every step has_cuda_batch().
bool batchable_pipeline(const Pipeline& pipeline, const EngineConfig& engine);

// Runs the graph on the given slots (their timeline already started). Work items (the tokens):
// batch x (slots + 1) + 2 x threads, so collecting a batch never starves the reader. A partial
// batch is sent when the graph has nothing else to do (end of input), never after a timeout.
void run_gpu_batch_graph(RunContext& run, ItemSource& source, int threads, const EngineConfig& engine,
                         std::vector<std::unique_ptr<GpuSlot>>& slots, GpuTimeline& timeline);

}  // namespace imflow
