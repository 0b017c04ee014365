// Warnings about an item's results that a user should see (logged, and in summary.json's item
// record): e.g. a detection threshold made from a noise estimate of 0.
#pragma once
#include "imflow/work_item.hpp"

namespace imflow {

// Append the warnings the item's results call for to item.warnings and log each with the item's name.
void add_result_warnings(WorkItem& item);

}  // namespace imflow
