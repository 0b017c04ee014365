// The two ends every flow graph shares: the front (file source joined, reserving, with a free
// work item -> parallel reader) and the back (writer, which returns the item to the pool).
// Work items are the tokens, so the pool size bounds the images resident in memory; the graphs
// put their own processing between read_items() and writer(). With a TokenTuner the pool grows
// during the run while it is what limits the run.
#pragma once
#include <tbb/flow_graph.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "item_source.hpp"
#include "stages.hpp"
#include "token_tuner.hpp"

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
  // into circulation and start the source. They live as long as this object. With `tuner`, every
  // item the writer finishes is reported to it, and the items it asks for are added to the pool.
  void start(size_t items, HostAllocator& allocator = pageable_allocator(), TokenTuner* tuner = nullptr);

  // Work items made so far.
  size_t pool_size() const;

 private:
  using Clock = std::chrono::steady_clock;
  // A work item, and when it last came back to the pool (or was made).
  struct PooledItem : WorkItem {
    Clock::time_point cycle_start;
  };
  void add_items(size_t count);
  void report_cycle(WorkItem& item);

  mutable std::mutex pool_mutex_;
  std::vector<std::unique_ptr<PooledItem>> pool_;
  HostAllocator* allocator_ = nullptr;
  TokenTuner* tuner_ = nullptr;
  tbb::flow::input_node<ItemRef> files_;
  tbb::flow::buffer_node<WorkItem*> free_items_;
  tbb::flow::join_node<ReadWork, tbb::flow::reserving> pair_;
  tbb::flow::function_node<ReadWork, WorkItem*> reader_;
  tbb::flow::function_node<WorkItem*, WorkItem*> writer_;
};

}  // namespace imflow
