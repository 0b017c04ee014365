// GraphEnds: source + token pool + reader at the front, writer returning tokens at the back.
#include "graph_ends.hpp"

#include <spdlog/spdlog.h>

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
      writer_(graph, threads, [this, &run](WorkItem* item) {
        finish_stage(run, *item);
        if (tuner_ != nullptr) report_cycle(*item);
        return item;
      }) {
  flow::make_edge(files_, flow::input_port<0>(pair_));
  flow::make_edge(free_items_, flow::input_port<1>(pair_));
  flow::make_edge(pair_, reader_);
  flow::make_edge(writer_, free_items_);
}

void GraphEnds::start(size_t items, HostAllocator& allocator, TokenTuner* tuner) {
  allocator_ = &allocator;
  tuner_ = tuner;
  add_items(items);
  files_.activate();
}

size_t GraphEnds::pool_size() const {
  std::lock_guard lock(pool_mutex_);
  return pool_.size();
}

void GraphEnds::add_items(size_t count) {
  std::vector<WorkItem*> made;
  {
    std::lock_guard lock(pool_mutex_);
    for (size_t i = 0; i < count; ++i) {
      pool_.push_back(std::make_unique<PooledItem>());
      pool_.back()->pixels.set_allocator(*allocator_);
      pool_.back()->cycle_start = Clock::now();
      made.push_back(pool_.back().get());
    }
  }
  for (WorkItem* item : made) free_items_.try_put(item);
}

// Every item in the pool is a PooledItem (add_items makes them all).
void GraphEnds::report_cycle(WorkItem& item) {
  auto& pooled = static_cast<PooledItem&>(item);
  const Clock::time_point now = Clock::now();
  double stage_seconds = 0.0;
  for (const StageTime& time : item.times) stage_seconds += time.seconds;
  const double cycle_seconds = std::chrono::duration<double>(now - pooled.cycle_start).count();
  pooled.cycle_start = now;
  if (const auto grown = tuner_->finished(cycle_seconds, stage_seconds)) {
    spdlog::info("work items {} -> {}: over the last items {:.0f}% of their time in the pool went to stages, so the "
                 "pool limited the run",
                 grown->from, grown->to, 100.0 * grown->in_stages);
    add_items(static_cast<size_t>(grown->to - grown->from));
  }
}

}  // namespace imflow
