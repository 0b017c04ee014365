// An in-place ascending heap sort for one thread's small arrays on the device (or the host): no
// recursion, no extra memory. Any correct sort leaves the same values in place.
#pragma once
#include "imflow/kernels/host_device.hpp"

namespace imflow::cuda {

template <typename Value, typename Index>
IMFLOW_HOST_DEVICE inline void heap_sort_ascending(Value* v, Index n) {
  auto sift = [v](Index root, Index end) {
    while (2 * root + 1 < end) {
      Index child = 2 * root + 1;
      if (child + 1 < end && v[child] < v[child + 1]) ++child;
      if (!(v[root] < v[child])) return;
      const Value t = v[root];
      v[root] = v[child];
      v[child] = t;
      root = child;
    }
  };
  for (Index s = n / 2; s-- > 0;) sift(s, n);
  for (Index end = n; end-- > 1;) {
    const Value t = v[0];
    v[0] = v[end];
    v[end] = t;
    sift(0, end);
  }
}

}  // namespace imflow::cuda
