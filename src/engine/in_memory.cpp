// process_in_memory (imflow/in_memory.hpp): an in-memory item through cpu_process_stage.
#include "imflow/in_memory.hpp"

#include "imflow/errors.hpp"
#include "imflow/summary.hpp"
#include "item_warnings.hpp"
#include "stages.hpp"

namespace imflow {

void process_in_memory(const Pipeline& pipeline, WorkItem& item) {
  if (pipeline.input.has_companions()) {  // read beside image files (companion_inputs.hpp), not given here
    throw ConfigError("input.weight, input.mask, input.flags and input.detect name files beside an image file; "
                      "an in-memory image has none (use imflow.run on files)");
  }
  RunSummary summary;  // the stage's context needs one; nothing is recorded in it
  RunContext run(pipeline, summary, nullptr, nullptr, nullptr);
  item.status = ItemStatus::pending;
  cpu_process_stage(run, item);
  if (item.status == ItemStatus::failed) throw InputError(item.error);
  add_result_warnings(item);
  item.status = ItemStatus::ok;
}

}  // namespace imflow
