// A pipeline: the parsed, validated YAML file (input, output, engine settings, ordered steps).
#pragma once
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "imflow/io/companion.hpp"
#include "imflow/kernels/image_flags.hpp"
#include "imflow/step.hpp"

namespace imflow {

// A weight map beside each image (SExtractor's WEIGHT_IMAGE, WEIGHT_TYPE, WEIGHT_THRESH,
// RESCALE_WEIGHTS): the per-pixel noise of the detection threshold and of every error column; in
// dual-image mode input.weight is the measured image's (the error columns) and input.detect.weight
// the detection image's (the threshold), each rescaled to its own image's noise.
enum class WeightType { map_rms, map_var, map_weight };
struct WeightConfig {
  CompanionSpec map{"weight map", ""};
  WeightType type = WeightType::map_weight;
  // Bad pixels: weight <= thresh (map_weight, default 0), rms or variance >= thresh (default: none).
  std::optional<double> thresh;
  bool rescale = true;  // map_var, map_weight: scaled to the image's measured background noise
  // SExtractor's WEIGHT_GAIN (its default): with measure's gain, a pixel's Poisson term is
  // value / gain x its variance / the global background variance (kernels/weight_gain.hpp).
  bool gain = true;
  bool present() const { return map.present(); }
};

struct InputConfig {
  std::filesystem::path dir;
  std::vector<std::string> patterns;  // glob patterns matched against file names
  bool recursive = false;
  int64_t max_pixels = int64_t{1} << 32;  // per image plane, checked before allocation
  int64_t max_file_bytes = int64_t{16} << 30;  // per input file (uncompressed size for .gz), checked before reading
  std::vector<std::string> extnames;      // FITS: only image HDUs with one of these EXTNAMEs (empty: all)
  int nifti_axis = 2;                     // NIfTI volumes: slice along i (0), j (1) or k (2)
  int64_t nifti_cache_mb = 1024;          // NIfTI voxel data read whole (.nii.gz, slices across the layout), LRU; 0: off
  WeightConfig weight;                    // none unless input.weight is set
  // A mask beside each image (input.mask, SEP's mask): pixels whose value is > mask_thresh (or
  // not finite) are left out of detection and measurement, as NaN pixels are.
  CompanionSpec mask{"mask", ""};
  double mask_thresh = 0.0;
  // A flag map beside each image (input.flags, SExtractor's FLAG_IMAGE), combined per source as
  // flag_type says (FLAG_TYPE).
  CompanionSpec flags{"flag map", ""};
  kernels::FlagType flag_type = kernels::FlagType::bit_or;
  // Dual-image mode (input.detect, --detect DIR): detect on this image, measure on the input;
  // detect_weight (input.detect.weight) is the detection image's weight map (never `gain`).
  CompanionSpec detect{"detection image", ""};
  WeightConfig detect_weight;  // its map's role: "detection weight map"
  // The companions' specs, for leaving their files out of the images (io/companion.hpp).
  std::vector<CompanionSpec> companions() const { return {weight.map, mask, flags, detect, detect_weight.map}; }
  bool has_companions() const { return weight.present() || mask.present() || flags.present() || detect.present(); }
};

struct OutputConfig {
  std::filesystem::path dir;
  std::vector<std::string> formats;  // csv, fits (catalogs), labels, bgsub
  bool manifest_sync = false;        // fdatasync OUT/manifest.jsonl after each line
  bool fsync = false;                // fsync every output file before its rename (power-loss durability)
  int png_compression = 1;           // zlib level of PNG outputs, 0 (none) .. 9 (smallest); docs/mri.md
  bool merged_catalog = true;        // with csv: OUT/catalog.csv, every item's rows with its file in front
  bool wants(const std::string& format) const;
  bool wants_catalog_files() const;  // csv, fits or ldac: the catalog is written (and its sky positions made)
  bool wants_merged_catalog() const;  // csv and merged_catalog: OUT/catalog.csv is written
};

// The most pinned work items per stream `buffers_per_stream` (and --buffers-per-stream) accepts.
inline constexpr int kMaxBuffersPerStream = 1024;

struct EngineConfig {
  std::string device = "auto";  // auto | cpu | cuda
  int threads = 0;              // 0: all hardware threads
  int buffers = 0;              // work buffers in flight on the CPU path; 0: 2 x threads within memory_mb
  int64_t memory_mb = 1024;     // CPU path: memory for the work items in flight when buffers is 0
  std::vector<int> devices;     // CUDA devices to use; empty: all of them
  int streams = 4;              // CUDA streams per GPU
  int buffers_per_stream = 0;   // pinned buffers per stream; 0: chosen per run (src/engine/items_in_flight.hpp)
  int batch = 0;                // same-shape items per GPU launch for batchable pipelines (1: per item;
                                // 0: chosen per run from the item size, src/engine/items_in_flight.hpp)
  bool fail_fast = false;
};

// Large FITS images processed as a stream of tiles (docs/tiling.md).
struct TilingConfig {
  int64_t size = 4096;         // tile edge in pixels; planes larger than this in either dimension are tiled; 0: never
  int64_t halo = -1;           // pixels read around each tile; -1: auto (the convolution steps' reach)
  bool explicit_size = false;  // set by the file or --tile: a pipeline that cannot run on tiles is an error
  bool resident = true;        // `resident: auto` (true) | off: on the CUDA engine, assemble an image that fits
                               // in GPU memory there from its strips and process it whole (docs/tiling.md)
};

struct Pipeline {
  std::string source;  // the YAML file name, for messages
  InputConfig input;
  OutputConfig output;
  EngineConfig engine;
  TilingConfig tiling;
  std::vector<std::unique_ptr<Step>> steps;

  // The whole pipeline with every default filled in (what `imflow validate` prints).
  YAML::Node resolved() const;
};

// Parse and validate a pipeline. Errors (ConfigError) name the file, line, column and key.
Pipeline load_pipeline(const std::filesystem::path& file);
Pipeline parse_pipeline(const std::string& yaml_text, const std::string& source_name);

// "all" -> {} (every device); "0,1" -> {0, 1}. Throws ConfigError.
std::vector<int> parse_device_list(const std::string& text);

// Check what the engine settings allow once overrides are applied (throws ConfigError).
void validate_engine(const EngineConfig& engine);

}  // namespace imflow
