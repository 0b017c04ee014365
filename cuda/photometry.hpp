// The measure step's photometry on the device (twin of PhotometrySetting::measure): the same
// kernels::measure_photometry per catalog row, compiled for the device, on the slot's image.
#pragma once
#include <vector>

#include "cuda/gpu_context.hpp"
#include "imflow/kernels/photometry_spec.hpp"
#include "imflow/source.hpp"

namespace imflow::cuda {

// Sources with a semi-major axis a of at least this (pixels) are measured by a whole block, not a
// warp: their apertures reach 6 a (Kron, FLUX_RADIUS) and the window 4 sig beyond, and a warp
// alone would take seconds over a bright galaxy's or a saturated star's hundreds of thousands
// of pixels while the other rows wait.
inline constexpr double kBlockRowMinA = 12.0;

// One slot's photometry buffers, created by its first photometry and kept (they only grow):
// the background-subtracted image, its mask of non-finite pixels, and the rows.
struct PhotometryState {
  DeviceBuffer<float> data, mask;
  DeviceBuffer<int> any_masked;  // whether `mask` has a pixel set (else the CPU passes no mask)
  // Dual-image mode with FLUX_AUTO (kron_image): the unfiltered detection image less its own
  // background and its mask, where the Kron radii are measured.
  DeviceBuffer<float> detection_data, detection_mask;
  DeviceBuffer<int> detection_any_masked;
  bool kron_image = false;
  DeviceBuffer<double> rows;
  DeviceBuffer<float> vignets;
  PinnedBuffer<double> rows_host;  // mapped: the rows measured in the stream (catalog capacity x stride)
  bool rows_in_stream = false;     // the current item's rows are in rows_host
  int row_clusters = -1;           // clusters of the large rows' kernel resident at once (0: none), found once
};

// After cuda::measure: enqueue the background-subtracted image the rows are measured on
// (gpu.image less the mesh map, or less float(results.median) after a global background, as the
// CPU's) and its mask of non-finite values, and mark the item for photometry with `spec`
// (gpu.has_photometry). The rows themselves are measured once the catalog is known: in the
// stream after the catalog rows (enqueue_catalog_photometry), or by collect_results
// (measure_catalog_photometry) for VIGNETs and catalogs that outgrew the device. Never synchronizes.
void photometry(GpuContext& gpu, const kernels::PhotometrySpec& spec);

// With the catalog rows (enqueue_download): when the spec asks for no VIGNET, enqueue the rows of
// every catalog row the device holds (min(results.nlabels, catalog capacity)) into `rows`, then
// copied into the mapped pinned rows_host in whole runs of bytes, reading the global noise from
// the device. Returns whether it did.
bool enqueue_catalog_photometry(GpuContext& gpu);

// After gpu.stream completed: the `count` rows enqueue_catalog_photometry measured, into `rows`
// (`vignets` emptied). False when it measured none for this item or the catalog outgrew them.
bool collect_catalog_photometry(GpuContext& gpu, int64_t count, std::vector<double>& rows, std::vector<float>& vignets);

// On a host thread after gpu.stream completed, for `count` catalog rows in mapped pinned memory
// (gpu.catalog_host): their spec.stride() values each into `rows` and their VIGNETs into `vignets`
// (PhotometryTable's layout), with the noise the CPU uses (the mesh RMS map, or the downloaded
// global std of the measured image: measurement_stats_host), the measure step's gain and the
// label map for mask_neighbours. Synchronizes the stream.
void measure_catalog_photometry(GpuContext& gpu, int64_t count, std::vector<double>& rows, std::vector<float>& vignets);

}  // namespace imflow::cuda
