// The CPU flow graph: source -> reader -> process -> writer with a bounded pool of work items.
#pragma once
#include "item_source.hpp"
#include "stages.hpp"

namespace imflow {

// Runs until the source is exhausted or the run stops. `buffers` items are in flight at most.
void run_cpu_graph(RunContext& run, ItemSource& source, int threads, int buffers);

}  // namespace imflow
