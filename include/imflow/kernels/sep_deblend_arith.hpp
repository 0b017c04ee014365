// SEP's deblending arithmetic shared by the CPU kernel and the GPU's (host and device): glibc's
// rand_r, the generator SEP's allocation draws from, with its jump ahead; and the step of
// analysemthresh's heap that replaces its root, quirks included.
#pragma once
#include <cstdint>

#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

// glibc's rand_r: a 32-bit linear congruential generator stepped three times per call.
IMFLOW_HOST_DEVICE inline int32_t glibc_rand_r(uint32_t& seed) {
  uint32_t next = seed;
  next = next * 1103515245u + 12345u;
  uint32_t result = (next / 65536u) % 2048u;
  next = next * 1103515245u + 12345u;
  result <<= 10;
  result ^= (next / 65536u) % 1024u;
  next = next * 1103515245u + 12345u;
  result <<= 10;
  result ^= (next / 65536u) % 1024u;
  seed = next;
  return static_cast<int32_t>(result);
}

// The seed after `calls` calls of glibc_rand_r, in O(log calls): s -> a s + c three times per
// call, the maps composed by squaring (mod 2^32).
IMFLOW_HOST_DEVICE inline uint32_t glibc_rand_r_skip(uint32_t seed, uint64_t calls) {
  uint32_t mul = 1u, add = 0u;  // the accumulated map
  uint32_t step_mul = 1103515245u, step_add = 12345u;
  uint64_t steps = 3 * calls;
  while (steps != 0) {
    if ((steps & 1) != 0) {
      mul = mul * step_mul;
      add = add * step_mul + step_add;
    }
    step_add = step_add * step_mul + step_add;
    step_mul = step_mul * step_mul;
    steps >>= 1;
  }
  return mul * seed + add;
}

// analysemthresh's insertion into its full heap of `minarea` floats (heap[0] the smallest): a
// value above the root replaces it and sifts down as SEP's loop does, which leaves j one past the
// swapped child, so the heap's content depends on the order of the values.
IMFLOW_HOST_DEVICE inline void sep_heap_replace_root(float* heap, int64_t minarea, float value) {
  if (!(value > heap[0])) return;
  heap[0] = value;
  for (int64_t j = 0, k; (k = (j + 1) << 1) <= minarea; j = k) {
    float* heapk = heap + k;
    float* heapj = heap + j;
    if (k != minarea && *(heapk - 1) > *heapk) {
      heapk++;
      k++;
    }
    if (*heapj <= *(--heapk)) break;
    const float swap = *heapk;
    *heapk = *heapj;
    *heapj = swap;
  }
}

}  // namespace imflow::kernels
