// The CPU flow graph. Work items are the tokens: a buffer_node pre-filled with the pool is
// joined (reserving) with the source, and the writer puts each item back, so at most `buffers`
// images are resident whatever the number of files.
#include "cpu_graph.hpp"

#include <tbb/flow_graph.h>

#include <memory>
#include <tuple>
#include <vector>

namespace imflow {

namespace flow = tbb::flow;

void run_cpu_graph(RunContext& run, ItemSource& source, int threads, int buffers) {
  std::vector<std::unique_ptr<WorkItem>> pool;
  for (int i = 0; i < buffers; ++i) pool.push_back(std::make_unique<WorkItem>());

  flow::graph graph;
  flow::input_node<ItemRef> files(graph, [&](tbb::flow_control& control) -> ItemRef {
    ItemRef ref;
    if (run.stopping() || !source.next(ref)) control.stop();
    return ref;
  });
  flow::buffer_node<WorkItem*> free_items(graph);
  flow::join_node<std::tuple<ItemRef, WorkItem*>, flow::reserving> pair(graph);
  flow::function_node<std::tuple<ItemRef, WorkItem*>, WorkItem*> reader(
      graph, threads, [&](const std::tuple<ItemRef, WorkItem*>& work) {
        WorkItem* item = std::get<1>(work);
        read_stage(run, *item, std::get<0>(work));
        return item;
      });
  flow::function_node<WorkItem*, WorkItem*> processor(graph, threads, [&](WorkItem* item) {
    cpu_process_stage(run, *item);
    return item;
  });
  flow::function_node<WorkItem*, WorkItem*> writer(graph, threads, [&](WorkItem* item) {
    finish_stage(run, *item);
    return item;
  });

  flow::make_edge(files, flow::input_port<0>(pair));
  flow::make_edge(free_items, flow::input_port<1>(pair));
  flow::make_edge(pair, reader);
  flow::make_edge(reader, processor);
  flow::make_edge(processor, writer);
  flow::make_edge(writer, free_items);
  for (auto& item : pool) free_items.try_put(item.get());
  files.activate();
  graph.wait_for_all();
}

}  // namespace imflow
