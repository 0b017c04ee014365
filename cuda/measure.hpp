// Per-source measurements on the device (twin of kernels::measure_sources).
#pragma once
#include "cuda/gpu_context.hpp"

namespace imflow::cuda {

// For labels 1..min(nlabels, catalog_capacity) of gpu.labels (label must have been enqueued):
// npix, flux, centroid, peak (first maximum in raster order), bbox, flux_iso, second moments,
// ellipse, the errors and flags, measured on gpu.image with float64 sums, background-subtracted
// as kernels::MeasureBackground says (the mesh maps when has_background_maps, else the median
// and std; `gain` in e-/ADU, 0 none). More labels than the capacity set
// results.catalog_overflow; collect_results then measures on the host. After deblend
// (has_deblend) the rows are kernels::measure_deblended's: a blend's child at SEP's centre.
void measure(GpuContext& gpu, double gain = 0.0);

namespace detail {
// Write the catalog rows (only the valid ones) into the mapped pinned gpu.catalog_host, staged in
// shared memory so that they cross PCIe as whole runs of bytes, and into the device copy the CSV
// text is made from when the slot wants one (cuda/catalog_text.hpp). Called by enqueue_download.
void enqueue_catalog_rows(GpuContext& gpu);
}  // namespace detail

}  // namespace imflow::cuda
