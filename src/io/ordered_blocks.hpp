// Large outputs made in numbered blocks: blocks are produced in parallel and consumed (written)
// one at a time in block order, with a bounded number in flight (the catalog CSV and FITS table);
// or placed one at a time in block order (given their offsets in a file) and then written in
// parallel (ConcurrentFileWriter).
#pragma once
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <cstddef>

namespace imflow::detail {

// produce(b) -> T for b in [0, blocks) on any thread; place(T&) in block order, one at a time;
// then finish(T&) on any thread. At most `per_thread` blocks per thread of the arena exist at
// once. The caller's thread takes no unrelated task while it waits (isolated). An exception from
// any of them stops the rest and is rethrown.
template <typename T, typename Produce, typename Place, typename Finish>
void for_blocks_placed_in_order(size_t blocks, Produce produce, Place place, Finish finish, size_t per_thread = 2) {
  if (blocks == 0) return;
  if (blocks == 1) {
    T block = produce(size_t{0});
    place(block);
    finish(block);
    return;
  }
  const size_t tokens = per_thread * static_cast<size_t>(tbb::this_task_arena::max_concurrency());
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
            tbb::make_filter<T, T>(tbb::filter_mode::serial_in_order,
                                   [&](T block) {
                                     place(block);
                                     return block;
                                   }) &
            tbb::make_filter<T, void>(tbb::filter_mode::parallel, [&](T block) { finish(block); }));
  });
}

// produce(b) -> T for b in [0, blocks) on any thread; consume(T&) in block order, one at a time.
template <typename T, typename Produce, typename Consume>
void for_blocks_in_order(size_t blocks, Produce produce, Consume consume) {
  for_blocks_placed_in_order<T>(blocks, produce, consume, [](T&) {});
}

}  // namespace imflow::detail
