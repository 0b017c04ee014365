// How many work items a run keeps in flight when the pipeline does not say: the CPU path's
// buffers within a memory budget, the CUDA path's pinned items per stream (docs/pipeline.md).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace imflow {

struct EngineConfig;
struct TilingPlan;

struct ItemsInFlight {
  int per_stream = 0;         // CUDA: pinned items per stream (0 on the CPU path)
  int64_t items = 0;          // work items in flight: CPU buffers, or per_stream x slots
  int64_t item_bytes = 0;     // the estimate the choice used (0: unknown)
  bool automatic = false;     // chosen here, not set by the pipeline or the command line
  std::string reason;
  nlohmann::json to_json() const;
};

// Float32 bytes of the largest plane of the first input file as a run holds it (a tile with its
// halo where `tiling` tiles it); 0 when unknown (no file, or a file the reader will reject).
int64_t first_plane_bytes(const std::vector<std::filesystem::path>& files, const TilingPlan* tiling);

// The host's physical memory in bytes.
uint64_t host_memory_bytes();

// CUDA, for `slots` streams over all GPUs and `threads` host threads: as the CPU path, two items
// per host thread (one in a host stage, one queued for it or on the GPU), so 2 x threads in whole
// buffers per stream from 2 (double buffering) to 16, and no more pinned memory than
// min(host memory / 8, 8 GiB) (never fewer than 2 per stream).
ItemsInFlight choose_gpu_tokens(int slots, int threads, int64_t plane_bytes, uint64_t host_memory);

// The most pinned items a run may grow an automatic choice to while the pool limits it
// (TokenTuner): four per host thread, within the same pinned budget; never fewer than `chosen`,
// and no growth when the item size is unknown.
int64_t gpu_token_ceiling(const ItemsInFlight& chosen, int threads, int64_t plane_bytes, uint64_t host_memory);

// CPU: two per thread, cut to what fits `budget_bytes` at kCpuBytesPerPixel x the plane's pixels
// per item (pixels, detection image, mask, labels, background map), at least one.
inline constexpr int64_t kCpuBytesPerPixel = 16;
ItemsInFlight choose_cpu_buffers(int threads, int64_t plane_bytes, int64_t budget_bytes);

// CUDA batch mode (docs/mri.md "Batches"): the same-shape items per launch when the pipeline does
// not say, as many as fill kGpuBatchBytes of float32 pixels, from 1 to kMaxGpuBatch; with
// `slots` streams' batches and one being gathered, no more pinned memory than the tokens' budget.
// Unknown plane size: kGpuBatchUnknownSize.
inline constexpr int64_t kGpuBatchBytes = int64_t{48} << 20;
inline constexpr int kMaxGpuBatch = 256;
inline constexpr int kGpuBatchUnknownSize = 64;
struct GpuBatchChoice {
  int batch = 1;
  bool automatic = false;
  std::string reason;
  nlohmann::json to_json() const { return {{"batch", batch}, {"automatic", automatic}, {"reason", reason}}; }
};
GpuBatchChoice choose_gpu_batch(int slots, int64_t plane_bytes, uint64_t host_memory);
// Batch mode's pool of work items: a batch per slot, one being gathered, two per host thread.
ItemsInFlight gpu_batch_items(int batch, int slots, int threads);
GpuBatchChoice gpu_batch_for_run(const EngineConfig& engine, int slots, int64_t plane_bytes);

// The run's choice: engine.buffers_per_stream (CUDA) or engine.buffers (CPU) when set.
ItemsInFlight gpu_tokens_for_run(const EngineConfig& engine, int slots, int threads, int64_t plane_bytes);
ItemsInFlight cpu_buffers_for_run(const EngineConfig& engine, int threads, int64_t plane_bytes);

}  // namespace imflow
