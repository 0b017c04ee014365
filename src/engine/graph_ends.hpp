// The two ends every flow graph shares: the front (file source joined, reserving, with a free
// work item -> parallel reader) and the back (writer, which returns the item to the pool).
// Work items are the tokens, so the pool size bounds the images resident in memory; the graphs
// put their own processing between read_items() and writer().
#pragma once
#include <tbb/flow_graph.h>

#include <functional>
#include <memory>
#include <tuple>
#include <vector>

#include "item_source.hpp"
#include "stages.hpp"

namespace imflow {

class GraphEnds {
 public:
  using ReadWork = std::tuple<ItemRef, WorkItem*>;
  // `after_read` runs in the reader, after the item was read (e.g. a host phase); may be empty.
  GraphEnds(tbb::flow::graph& graph, RunContext& run, ItemSource& source, int threads,
            std::function<void(WorkItem&)> after_read = {});

  // Where read items come out, and where finished items go in.
  tbb::flow::sender<WorkItem*>& read_items() { return reader_; }
  tbb::flow::receiver<WorkItem*>& writer() { return writer_; }

  // Make `items` work items (their pixels from `allocator`: pinned for the CUDA graphs), put them
  // into circulation and start the source. They live as long as this object.
  void start(size_t items, HostAllocator& allocator = pageable_allocator());

 private:
  std::vector<std::unique_ptr<WorkItem>> pool_;
  tbb::flow::input_node<ItemRef> files_;
  tbb::flow::buffer_node<WorkItem*> free_items_;
  tbb::flow::join_node<ReadWork, tbb::flow::reserving> pair_;
  tbb::flow::function_node<ReadWork, WorkItem*> reader_;
  tbb::flow::function_node<WorkItem*, WorkItem*> writer_;
};

}  // namespace imflow
