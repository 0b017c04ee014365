// GraphEnds: source + token pool + reader at the front, writer returning tokens at the back.
#include "graph_ends.hpp"

namespace imflow {

namespace flow = tbb::flow;

GraphEnds::GraphEnds(flow::graph& graph, RunContext& run, ItemSource& source, int threads,
                     std::function<void(WorkItem&)> after_read)
    : files_(graph,
             [&run, &source](tbb::flow_control& control) -> ItemRef {
               ItemRef ref;
               if (run.stopping() || !source.next(ref)) control.stop();
               return ref;
             }),
      free_items_(graph),
      pair_(graph),
      reader_(graph, threads,
              [&run, after_read = std::move(after_read)](const ReadWork& work) {
                WorkItem* item = std::get<1>(work);
                read_stage(run, *item, std::get<0>(work));
                if (after_read) after_read(*item);
                return item;
              }),
      writer_(graph, threads, [&run](WorkItem* item) {
        finish_stage(run, *item);
        return item;
      }) {
  flow::make_edge(files_, flow::input_port<0>(pair_));
  flow::make_edge(free_items_, flow::input_port<1>(pair_));
  flow::make_edge(pair_, reader_);
  flow::make_edge(writer_, free_items_);
}

void GraphEnds::start(size_t items, HostAllocator& allocator) {
  for (size_t i = 0; i < items; ++i) {
    pool_.push_back(std::make_unique<WorkItem>());
    pool_.back()->pixels.set_allocator(allocator);
  }
  for (const auto& item : pool_) free_items_.try_put(item.get());
  files_.activate();
}

}  // namespace imflow
