// One image held in memory (not read from a file) through a pipeline's steps on the CPU, by the
// same stage that `imflow run` processes each item with; imflow.extract_image uses it.
#pragma once
#include "imflow/pipeline.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

// Run every step of `pipeline` on `item`, whose pixels (and ref, which names it in messages) the
// caller has set, with the CPU stage of `imflow run`, then add the result warnings that a run
// records. The pipeline's input, output, engine and tiling sections are not used: the image is
// processed whole, on the calling thread's task arena. A failed step throws InputError with the
// message `imflow run` would log for the item.
void process_in_memory(const Pipeline& pipeline, WorkItem& item);

}  // namespace imflow
