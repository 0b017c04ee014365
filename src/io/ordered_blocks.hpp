// Large outputs made in numbered blocks: blocks are produced in parallel and consumed (written)
// one at a time in block order, with a bounded number in flight (the catalog CSV and FITS table).
#pragma once
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <cstddef>

namespace imflow::detail {

// produce(b) -> T for b in [0, blocks) on any thread; consume(T&) in block order, one at a time.
// At most 2 blocks per thread of the arena exist at once. The caller's thread takes no unrelated
// task while it waits (isolated). An exception from either stops the rest and is rethrown.
template <typename T, typename Produce, typename Consume>
void for_blocks_in_order(size_t blocks, Produce produce, Consume consume) {
  if (blocks == 0) return;
  if (blocks == 1) {
    T block = produce(size_t{0});
    consume(block);
    return;
  }
  const size_t tokens = 2 * static_cast<size_t>(tbb::this_task_arena::max_concurrency());
  size_t next = 0;
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_pipeline(
        tokens,
        tbb::make_filter<void, size_t>(tbb::filter_mode::serial_in_order,
                                       [&](tbb::flow_control& control) -> size_t {
                                         if (next == blocks) control.stop();
                                         return next++;
                                       }) &
            tbb::make_filter<size_t, T>(tbb::filter_mode::parallel, [&](size_t b) { return produce(b); }) &
            tbb::make_filter<T, void>(tbb::filter_mode::serial_in_order, [&](T block) { consume(block); }));
  });
}

}  // namespace imflow::detail
