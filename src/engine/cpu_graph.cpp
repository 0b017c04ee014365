// The CPU flow graph: the shared ends (source -> reader, writer -> pool) around one parallel
// processing node that runs every step on the host. At most `buffers` images are resident.
#include "cpu_graph.hpp"

#include <tbb/flow_graph.h>

#include <memory>
#include <vector>

#include "graph_ends.hpp"

namespace imflow {

namespace flow = tbb::flow;

void run_cpu_graph(RunContext& run, ItemSource& source, int threads, int buffers) {
  std::vector<std::unique_ptr<WorkItem>> pool;
  for (int i = 0; i < buffers; ++i) pool.push_back(std::make_unique<WorkItem>());

  flow::graph graph;
  GraphEnds ends(graph, run, source, threads);
  flow::function_node<WorkItem*, WorkItem*> processor(graph, threads, [&](WorkItem* item) {
    cpu_process_stage(run, *item);
    return item;
  });
  flow::make_edge(ends.read_items(), processor);
  flow::make_edge(processor, ends.writer());
  ends.start(pool);
  graph.wait_for_all();
}

}  // namespace imflow
