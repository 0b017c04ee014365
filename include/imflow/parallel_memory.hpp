// Large host copies and first touches split over TBB's threads: one thread moves ~10 GB/s and
// faults its pages in one at a time, so a mosaic's hundreds of megabytes of rows and text would
// otherwise hold the whole image up.
#pragma once
#include <cstddef>

namespace imflow {

// memcpy(to, from, bytes), in 512 KiB pieces on all threads when it is large (else one memcpy).
void copy_on_all_threads(void* to, const void* from, size_t bytes);

// Faults the pages of [data, data + bytes) in for writing, on all threads (Linux's
// MADV_POPULATE_WRITE; a no-op where it is missing or for a small range): what a first touch
// would cost (zeroing, huge pages included) is spread before one thread writes the range. The
// bytes already there stay. Returns whether every page was faulted in.
bool fault_in_on_all_threads(void* data, size_t bytes);

}  // namespace imflow
