// GPU-resident images (docs/tiling.md): a large plane that fits in GPU memory is read in strips of
// whole rows on all threads, each strip through a pinned staging buffer straight into its rows of
// the slot's device image; the ordinary GPU steps then process it whole.
#pragma once
#include <cstdint>
#include <vector>

#include "cuda/gpu_context.hpp"
#include "stages.hpp"

namespace imflow {

// The largest plane (pixels) processed as a GPU-resident image on every one of `devices`: what
// fits in 80% of each device's free memory at `bytes_per_pixel` (TilingPlan::resident_bytes_per_pixel),
// and below 2^31 pixels (the label kernel's int32 indices).
int64_t resident_pixel_limit(const std::vector<int>& devices, int64_t bytes_per_pixel);

// The catalog rows a GPU-resident plane of `pixels` is given room for: a source per 1,024 pixels
// (a dense field's), to a power of two.
int64_t expected_catalog_rows(int64_t pixels);

// A catalog of `rows` default rows on huge pages, for GpuContext::rows_ahead: made on a thread of
// its own while the plane is read and processed.
Catalog catalog_rows_ahead(int64_t rows);

// Read the item's plane in strips of ItemRef::resident_rows rows, in parallel on the current
// arena's threads, and copy each into gpu.image at its rows; returns when every copy has completed.
// Sets gpu's image size (cuda::prepare_item) and item.input_bytes, adds the strips' read time
// (busy seconds: the reads, and waits for a staging buffer's previous copy) to the item as "read"
// and one trace event per strip. Throws InputError naming the file for a bad read,
// cuda::CudaError for a CUDA failure.
void upload_resident_plane(RunContext& run, GpuContext& gpu, WorkItem& item);

}  // namespace imflow
