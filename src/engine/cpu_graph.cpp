// The CPU flow graph: the shared ends (source -> reader, writer -> pool) around one parallel
// processing node that runs every step on the host. At most `buffers` images are resident.
#include "cpu_graph.hpp"

#include <tbb/flow_graph.h>

#include "graph_ends.hpp"

namespace imflow {

namespace flow = tbb::flow;

void run_cpu_graph(RunContext& run, ItemSource& source, int threads, int buffers) {
  flow::graph graph;
  GraphEnds ends(graph, run, source, threads);
  flow::function_node<WorkItem*, WorkItem*> processor(graph, threads, [&](WorkItem* item) {
    cpu_process_stage(run, *item);
    return item;
  });
  flow::make_edge(ends.read_items(), processor);
  flow::make_edge(processor, ends.writer());
  ends.start(static_cast<size_t>(buffers));
  graph.wait_for_all();
}

}  // namespace imflow
