// One slot's device state (buffers, results, catalog) used by one item at a time in stream order,
// and the upload / download / collect entry points that move an item through it.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "cuda/resources.hpp"
#include "imflow/kernels/photometry_spec.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

namespace cuda {

// Scalar results written by the kernels (device memory; a pinned mirror is downloaded).
struct DeviceResults {
  double median;           // background
  double std;
  long long kept;
  long long valid;
  int iterations;
  int nlabels;             // label
  double threshold;        // segment
  long long mask_pixels;   // segment: pixels set in the mask
  int catalog_overflow;    // measure: nlabels exceeded the catalog capacity
  int reserved;
  // normalize (cuda/normalize.hpp): original = x * norm_scale + norm_offset; norm_set counts the
  // normalize steps run (a second one composes with the first, as on the CPU).
  double norm_offset;
  double norm_scale;
  int norm_set;
  int svd_status;          // svd_reconstruct: cuSOLVER info (0 ok), or the error codes of cuda/svd.hpp
  // svd_reconstruct metrics (cuda/svd.hpp, SvdMetric indices), named as the CPU step's.
  double svd_metrics[8];
  long long meshes_dropped;  // background method mesh: meshes with fewer than half of their pixels valid
  unsigned long long zeroed_pixels;  // normalize nonfinite: zero: NaN/Inf pixels set to 0
  double weight_scale;       // background with a weight map: the variances' rescaling factor
  long long weight_meshes;   // the meshes whose ratio entered it (0: not rescaled)
  long long csv_text_bytes;  // the catalog's CSV text made on the device (-1: outgrew its buffer)
};

// A catalog row as the device writes it, straight into mapped pinned memory: imflow::Source
// itself (plain data), so the host takes the rows with one copy.
using DeviceSource = ::imflow::Source;
static_assert(std::is_trivially_copyable_v<DeviceSource>);

// Per-label accumulators of the measure kernel (struct of arrays, `capacity` rows).
struct CatalogAccumulators {
  DeviceBuffer<unsigned long long> npix;
  DeviceBuffer<double> flux, sum_x, sum_y;
  DeviceBuffer<unsigned long long> peak;  // ordered value << 32 | ~index (or value only, see measure.cu)
  DeviceBuffer<unsigned long long> peak_index;
  DeviceBuffer<unsigned int> xmin, xmax, ymin, ymax;
  // Moments of w = value - background and of the pixel variances about each source's first pixel
  // (cuda/measure.cu), and flags.
  DeviceBuffer<double> flux_iso, sum_wx, sum_wy, sum_wxx, sum_wyy, sum_wxy;
  DeviceBuffer<double> sum_v, sum_vx, sum_vy, sum_vxx, sum_vyy, sum_vxy;  // the pixel variances' moments
  DeviceBuffer<int> flags;
  DeviceBuffer<unsigned long long> first;  // raster index of each label's first pixel: the moments' origin
  void reserve(size_t rows);
};

// What enqueue_download copies besides the results and the catalog.
struct DownloadWants {
  bool labels = false;     // the int32 label map
  bool mask = false;       // the uint8 mask
  bool detection = false;  // the filtered detection image (when a GPU convolve produced one)
  bool pixels = false;     // the image itself (when a GPU step replaced it, e.g. convolve full)
  bool background_map = false;  // the mesh background map (the bgsub output subtracts it)
  bool csv_text = false;  // the catalog's CSV rows as text (cuda/catalog_text.hpp)
};

// A convolution kernel uploaded once per slot (kept for the slot's lifetime).
struct SvdState;  // svd_reconstruct's per-slot solver state (cuda/svd.hpp)
struct MeshBackgroundState;  // background method mesh's per-slot buffers (cuda/background_mesh.hpp)
struct DeblendState;  // deblend's per-slot buffers and result (cuda/deblend_objects.hpp)
struct PhotometryState;  // measure's photometry buffers (cuda/photometry.hpp)
struct CatalogTextState;  // the catalog's CSV text buffers (cuda/catalog_text.hpp)
struct WeightNoiseState;  // background's weight-map buffers (cuda/weight_noise.hpp)
struct MeasuredImageState;  // dual-image mode's measured image (cuda/measured_image.hpp)

struct ConvolveWeights {
  std::vector<float> host;  // content, the cache key (with the sizes)
  int kw = 0, kh = 0;
  bool separable = false;  // rank 1: device holds [kernel | flipped row (kw) | flipped column (kh)]
  PinnedBuffer<float> staging;
  DeviceBuffer<float> device;
};

inline constexpr int64_t kInitialCatalogCapacity = 65536;

}  // namespace cuda

// step.hpp forward-declares imflow::GpuContext; the launchers live in imflow::cuda.
struct GpuContext {
  // `stream` is not owned (the engine owns the Stream); it must belong to `device`.
  GpuContext(int device, cudaStream_t stream);
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  int device = 0;
  cudaStream_t stream = nullptr;
  int64_t width = 0;
  int64_t height = 0;
  int64_t size() const { return width * height; }

  // Device buffers (grow-only).
  cuda::DeviceBuffer<float> image;       // the uploaded pixels (or what a GPU step made of them)
  cuda::DeviceBuffer<float> image_spare; // output of a size-changing step, swapped with `image`
  cuda::DeviceBuffer<float> filter_input; // convolve after the background: the image less it, filtered into detection
  cuda::DeviceBuffer<float> detection;   // filtered image, valid when has_detection
  cuda::DeviceBuffer<uint8_t> mask;
  cuda::DeviceBuffer<int32_t> labels;
  cuda::DeviceBuffer<int32_t> label_roots;    // CCL: the roots, a bit per pixel, and the scan of their counts
  cuda::DeviceBuffer<int32_t> label_npix;     // CCL with minarea: pixels per root
  cuda::DeviceBuffer<unsigned long long> measure_segments;  // measure: the sources' row segments (cuda/measure.cu)
  cuda::DeviceBuffer<unsigned char> scratch;  // CUB temporary storage
  cuda::DeviceBuffer<unsigned char> background_work;
  cuda::DeviceBuffer<cuda::DeviceResults> results;
  cuda::CatalogAccumulators accumulators;
  int64_t catalog_capacity = cuda::kInitialCatalogCapacity;
  double measure_gain = 0.0;  // the measure step's gain (e-/ADU), for the host fallback of host_catalog
  std::vector<std::unique_ptr<cuda::ConvolveWeights>> convolve_weights;

  // Pinned host mirrors (grow-only). catalog_host is written directly by the device.
  cuda::PinnedBuffer<cuda::DeviceResults> results_host;
  cuda::PinnedBuffer<cuda::DeviceSource> catalog_host;
  cuda::PinnedBuffer<int32_t> labels_host;
  cuda::PinnedBuffer<uint8_t> mask_host;
  cuda::PinnedBuffer<float> detection_host;
  cuda::PinnedBuffer<float> pixels_host;
  cuda::PinnedBuffer<float> background_map_host;
  // Rows made ahead for the next catalog collected (a GPU-resident image's, while its strips are
  // read): collect_results copies a catalog of up to this many rows (and at least a quarter of
  // them) into them on all threads, where one thread would otherwise make and copy every row.
  Catalog rows_ahead;

  // Which steps were enqueued for the current item (set on the host as they are enqueued).
  bool has_detection = false;
  bool has_background = false;
  bool has_threshold = false;
  bool has_mask = false;
  bool has_labels = false;
  bool has_catalog = false;
  bool image_modified = false;
  // The item's host pixels are the file's big-endian words (WorkItem::pixels_big_endian): only
  // gpu.image, swapped after the upload, holds the values.
  bool host_pixels_big_endian = false;
  cuda::DownloadWants downloaded;  // what the last enqueue_download copied
  bool has_normalization = false;  // normalize ran: results.norm_* hold the mapping
  bool has_svd_metrics = false;    // svd_reconstruct ran: results.svd_metrics hold its metrics
  std::shared_ptr<cuda::SvdState> svd;  // created by the first svd_reconstruct on this slot
  bool has_background_maps = false;  // background method mesh ran: mesh_background holds the maps
  std::shared_ptr<cuda::MeshBackgroundState> mesh_background;  // created by the first mesh background
  bool has_weight_noise = false;  // background's rms_map came from a weight map (input.weight)
  bool weight_rescale = false;    // ... rescaled to the image's noise (results.weight_scale)
  bool weight_gain = false;  // input.weight.gain (set by measure): SExtractor's WEIGHT_GAIN against results.std
  bool global_noise = false;  // measure's noise: global: the error columns take results.std, not the RMS map
  double saturation = std::numeric_limits<double>::infinity();  // measure's saturation level for this item: peaks at or above it flag kFlagSaturated
  std::shared_ptr<cuda::WeightNoiseState> weight_noise;  // created by the first weighted item
  // Dual-image mode (input.detect): gpu.detection holds the detection image as uploaded (then
  // filtered by convolve), gpu.image the measured one, whose own background and measure pass
  // live in `measured` (cuda/measured_image.hpp).
  bool dual_image = false;
  std::shared_ptr<cuda::MeasuredImageState> measured;
  // A convolve filtered the detection image less its background (FILTER Y): measure takes the
  // positions and shapes from gpu.detection and the fluxes from gpu.image, in two passes as in
  // dual-image mode (their accumulators in `measured`).
  bool filtered_shapes = false;
  bool has_deblend = false;  // deblend ran: gpu.labels holds its objects, deblend->workspace their records
  std::shared_ptr<cuda::DeblendState> deblend;  // created by the first deblend on this slot
  bool has_photometry = false;  // measure's photometry was asked: collect_results measures the rows
  kernels::PhotometrySpec photometry_spec;
  std::shared_ptr<cuda::PhotometryState> photometry;  // created by the first photometry on this slot
  bool has_catalog_text = false;  // the rows' CSV text is enqueued (cuda/catalog_text.hpp)
  std::shared_ptr<cuda::CatalogTextState> catalog_text;  // created by the first catalog text on this slot

  // Device properties read once.
  int sm_count = 0;
  size_t max_shared_optin = 0;
  // Test hook: measure with the two-pass peak search used for images of 2^32 pixels or more.
  bool force_wide_peak = false;
};

namespace cuda {
using ::imflow::GpuContext;

// Set width/height, grow the buffers, copy item.pixels to the device (asynchronous: the
// engine gives items pinned pixel buffers), reset the step flags and the device results. In
// dual-image mode (item.dual_image) item.detection goes to gpu.detection too.
void enqueue_upload(GpuContext& gpu, const WorkItem& item);

// enqueue_upload without the copy: a width x height image whose pixels the caller copies into
// gpu.image itself (a GPU-resident image, src/engine/gpu_resident.cpp).
void prepare_item(GpuContext& gpu, int64_t width, int64_t height);

// After the stream completed: when the catalog overflowed the device capacity, grow it and
// measure again on the device (the image and labels are still there) and download the rows;
// synchronizes. For items whose pixels are not on the host (collect_results would otherwise
// measure there). Returns whether it measured again.
bool remeasure_if_overflowed(GpuContext& gpu);

// Give the per-image device buffers (image, labels, mask, sort and label work, background maps)
// back to the driver; the next item allocates what it needs. Synchronizes the device (cudaFree).
void release_image_buffers(GpuContext& gpu);

// Copy the results, the catalog rows and what `wants` asks for into the context's pinned
// mirrors. Never synchronizes.
void enqueue_download(GpuContext& gpu, const DownloadWants& wants);

// On a host thread after gpu.stream has completed: move the downloaded results into `item`.
// A catalog that overflowed the device capacity is measured on the host (and the capacity grown
// for the next item), so results never depend on a fixed limit.
void collect_results(GpuContext& gpu, WorkItem& item);

// normalize's results into the item: the mapping (composed with one the host made before, as on
// the CPU) and, when pixels were zeroed (nonfinite: zero), item.metrics["zeroed_pixels"].
void collect_normalization(const DeviceResults& results, WorkItem& item);

// Set the number of catalog rows measured on the device (buffers only grow; a smaller value is
// honoured, which tests use to exercise the overflow path). May synchronize the device through
// cudaMalloc/cudaFree: call between items only.
void set_catalog_capacity(GpuContext& gpu, int64_t capacity);

}  // namespace cuda
}  // namespace imflow
