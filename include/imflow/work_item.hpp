// A work item: one 2-D image plane travelling through the pipeline, with its results.
// Items are pooled and reused (their buffers keep their capacity), which bounds memory.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "imflow/catalog_text.hpp"
#include "imflow/image.hpp"
#include "imflow/kernels/image_flags.hpp"
#include "imflow/photometry.hpp"
#include "imflow/source.hpp"
#include "imflow/tile_rect.hpp"

namespace imflow {

struct TiledImage;  // the shared state of one image processed as tiles (src/engine/tiled_image.hpp)
namespace kernels {
struct MeshGrid;  // the mesh background's grid (include/imflow/kernels/background_mesh.hpp)
struct DeblendResult;  // the deblending's objects (include/imflow/kernels/deblend.hpp)
}

// How `segment` thresholded an item, so that `deblend` rebuilds the values and thresholds it
// detected with: value = pixel - background (the mesh map, the global median, or nothing with
// relative_to: zero) above nsigma x noise (the mesh RMS map per pixel with relative_to: rms_map,
// else the one global rms or std); float32: in SEP's float arithmetic (segment's compare: float32).
struct SegmentThreshold {
  double nsigma = 0.0;
  bool subtract_background = true;
  bool detection_subtracted = false;  // a convolve subtracted it before filtering (subtract_background false)
  bool rms_map = false;
  bool float32 = false;
  // How the unfiltered image's values are made (deblend's measurement values): less the background,
  // also where a convolve subtracted it from the detection image before filtering.
  SegmentThreshold unfiltered() const {
    SegmentThreshold how = *this;
    how.subtract_background = subtract_background || detection_subtracted;
    return how;
  }
};

// Where an item comes from: a file, and inside it an HDU and a plane of a cube.
struct ItemRef {
  std::filesystem::path path;      // the input file
  std::filesystem::path relative;  // the file relative to the input directory
  int hdu = 0;                     // 0-based HDU index (0 = primary), as astropy counts
  std::string extname;             // that HDU's EXTNAME (FITS; empty when absent)
  int64_t plane = 0;               // 0-based plane of a cube (0 for a 2-D image)
  int64_t planes = 1;              // planes in this HDU
  int64_t index = 0;               // sequence number of the item in the run
  int64_t file_index = 0;          // sequence number of its file in the run
  std::string error;               // set when the file could not even be scanned
  bool last_of_file = false;       // the last item of its file
  int bit_depth = 0;               // integer sample depth as stored (8, 16: PNG/NIfTI), 0 for float/other
  // One tile of an image larger than tiling.size (docs/tiling.md); tile < 0: the whole plane.
  int64_t tile = -1;               // tile index, raster order over the tile grid
  int64_t tiles = 0;               // tiles of the image
  TileRect core;                   // the pixels this tile owns (whole-image coordinates)
  TileRect halo;                   // the pixels it reads: core + halo, clipped at the image border
  std::shared_ptr<TiledImage> tiled;  // per-image state shared by its tiles
  // > 0: a whole plane (tile < 0, core = the plane) that the CUDA engine reads in strips of this
  // many rows straight into GPU memory and processes there whole (docs/tiling.md, "GPU-resident
  // images"); its pixels never come to the host.
  int64_t resident_rows = 0;
};

// Wall time of one stage for one item, in seconds.
struct StageTime {
  std::string stage;
  double seconds = 0.0;
};

enum class ItemStatus { pending, ok, failed };

// How the `normalize` step mapped an item's pixels: original = normalized * scale + offset.
struct Normalization {
  double offset = 0.0;
  double scale = 1.0;
};

struct WorkItem {
  ItemRef ref;
  ItemStatus status = ItemStatus::pending;
  std::string error;  // set when status == failed

  // Pixel data (float32, BSCALE/BZERO applied, invalid pixels as NaN).
  ImageBuffer pixels;
  // The reader left `pixels` as the file's big-endian float32 words, for the CUDA engine to swap
  // on the device after the upload (ReadLimits::float32_swap_deferred); the host copy then stays
  // in that order.
  bool pixels_big_endian = false;
  // A FITS image's header records as its read gave them (ReadLimits::header_records): the outputs'
  // WCS is parsed from them; empty for other formats and for tiles (read again from the file).
  std::vector<std::string> fits_header;
  // The image segmentation runs on when a step filtered it (e.g. convolve); empty means `pixels`.
  ImageBuffer detection;
  // Set by `convolve` (apply_to: detection) after the background step: `detection` is the filtered
  // image less its background (SExtractor's FILTER Y, sep.extract's filter of data - bkg), so
  // `segment` and `deblend` subtract no background from it.
  bool detection_subtracted = false;
  int64_t input_bytes = 0;  // bytes of pixel data as stored in the file

  // Results of the astronomy steps, set by the steps that compute them.
  std::optional<BackgroundStats> background;
  // Set by `background` with method: mesh: the background and its RMS per pixel (SEP's
  // Background.back() and .rms()), row-major like `pixels`; empty with the global method.
  std::vector<float> background_map;
  std::vector<float> rms_map;
  // Set by `background` with method: mesh on the CPU, which leaves rms_map empty: the mesh grid
  // that kernels::MeshRows evaluates the RMS map from one row at a time (segment does).
  std::shared_ptr<const kernels::MeshGrid> mesh_grid;
  // Set by the reader with input.weight: the weight map as variances before SExtractor's
  // rescaling (rms^2, var or 1/weight), +inf at bad pixels (whose image pixels are made NaN);
  // `background` rescales them when weight_rescale and sets rms_map from them (in dual-image
  // mode measure_rms_map: input.weight is the measured image's).
  std::vector<float> weight_variance;
  bool weight_rescale = false;
  // Dual-image mode with input.detect.weight: the detection image's weight map as variances, which
  // `background` rescales (detection_weight_rescale) into rms_map, the noise segment thresholds against.
  std::vector<float> detection_weight_variance;
  bool detection_weight_rescale = false;
  bool weight_gain = false;  // input.weight.gain: SExtractor's WEIGHT_GAIN
  // Set by the reader with input.flags: the flag map's values, 32 bits held as int32 (FITS maps
  // read as integers; PNG and NIfTI values, 0 where not finite), and how `measure` combines them
  // over each segment (Source::imaflags_iso; input.flags.type).
  std::vector<int32_t> flag_map;
  kernels::FlagType flag_type = kernels::FlagType::bit_or;
  // Dual-image mode (input.detect): `detection` holds the detection image read beside the item
  // (background, segment, label and deblend work on it); the measurement image's own background,
  // which `measure` subtracts, is set here by `background`. When `convolve` filters `detection`,
  // the image as read moves to `detection_as_read`: positions, shapes, deblend's measurement
  // values and the Kron radii are taken from it, as SExtractor measures its unfiltered dfield.
  bool dual_image = false;
  ImageBuffer detection_as_read;
  std::optional<BackgroundStats> measure_background;
  std::vector<float> measure_background_map;
  std::shared_ptr<const kernels::MeshGrid> measure_mesh_grid;
  std::vector<float> measure_rms_map;  // with input.weight: the measured image's noise from its weight map
  std::optional<double> threshold;
  std::optional<SegmentThreshold> segment_threshold;  // set by `segment`
  std::vector<uint8_t> mask;     // 1 where the pixel is above threshold; deblend marks what CLEAN removed (0 or 2)
  std::vector<int32_t> labels;   // 0 background, 1..nlabels sources
  std::optional<int32_t> nlabels;
  // Set by `deblend`, which replaces `labels` by its objects: per object (label - 1) whether it
  // was split from a blend and SEP's centre; `measure` reads it.
  std::shared_ptr<const kernels::DeblendResult> deblend;
  std::optional<Catalog> catalog;
  // Set with `catalog` by the GPU engine when the CSV rows were written on the device (the CSV
  // writer then only fills in ra, dec and errtheta); whatever replaces or edits `catalog` resets it.
  std::shared_ptr<const CatalogCsvText> catalog_csv;
  // Set by measure with photometry parameters: a row per catalog source.
  std::optional<PhotometryTable> photometry;
  std::optional<double> gain;    // e-/ADU the catalog's error columns used (0: none), set by measure

  // Free-form numeric results for the summary (e.g. metrics of other workloads).
  std::map<std::string, double> metrics;
  // What a user should know about an item that was processed (logged and in summary.json).
  std::vector<std::string> warnings;
  // Set by `normalize`, so outputs (PNG) can be written back in the original intensity range.
  std::optional<Normalization> normalization;

  std::vector<StageTime> times;
  std::vector<float> scratch;  // reusable working memory for steps
  // Host-computed data a GPU step uploads (e.g. svd_reconstruct's hybrid: the CPU SVD factors,
  // [U_k | s | V_k]); filled by Step::prepare_host, pinned in the CUDA engine's items.
  std::vector<float> host_factors;
  int64_t host_factors_k = -1;  // the rank those factors were cut to (-1: none)

  // Forget the previous item's results, keeping the buffers' capacity.
  void reset(ItemRef new_ref) {
    ref = std::move(new_ref);
    status = ItemStatus::pending;
    error.clear();
    pixels.resize(0, 0);
    pixels_big_endian = false;
    fits_header.clear();
    detection.resize(0, 0);
    detection_subtracted = false;
    input_bytes = 0;
    background.reset();
    background_map.clear();
    rms_map.clear();
    mesh_grid.reset();
    weight_variance.clear();
    weight_rescale = false;
    detection_weight_variance.clear();
    detection_weight_rescale = false;
    weight_gain = false;
    flag_map.clear();
    flag_type = kernels::FlagType::bit_or;
    dual_image = false;
    detection_as_read.resize(0, 0);
    measure_background.reset();
    measure_background_map.clear();
    measure_mesh_grid.reset();
    measure_rms_map.clear();
    threshold.reset();
    segment_threshold.reset();
    mask.clear();
    labels.clear();
    nlabels.reset();
    deblend.reset();
    catalog.reset();
    catalog_csv.reset();
    photometry.reset();
    gain.reset();
    metrics.clear();
    warnings.clear();
    normalization.reset();
    times.clear();
    host_factors_k = -1;
  }

  // The plane's size: the pixels' on the host, or the plane's for a GPU-resident image.
  int64_t plane_width() const { return ref.resident_rows > 0 ? ref.core.width : pixels.width(); }
  int64_t plane_height() const { return ref.resident_rows > 0 ? ref.core.height : pixels.height(); }

  // The image that thresholding and labelling use.
  const ImageBuffer& detection_image() const { return detection.empty() ? pixels : detection; }
  // Dual-image mode: the detection image before any filter.
  const ImageBuffer& unfiltered_detection() const { return detection_as_read.empty() ? detection : detection_as_read; }

  void fail(std::string message) {
    status = ItemStatus::failed;
    error = std::move(message);
  }
};

}  // namespace imflow
