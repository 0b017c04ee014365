// How many pinned work items the CUDA item graph keeps in flight: engine.buffers_per_stream when
// set, else chosen from the host's threads, the GPU slots and the size of one item (docs/pipeline.md).
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace imflow {

struct RunContext;
struct EngineConfig;
class ItemSource;

struct GpuTokens {
  int buffers_per_stream = 2;
  int64_t tokens = 0;         // buffers_per_stream x slots
  int64_t item_bytes = 0;     // float32 bytes of the largest item the run expects (0: unknown)
  bool automatic = false;     // chosen here, not set by the pipeline or --buffers-per-stream
  std::string reason;
  nlohmann::json to_json() const;
};

// The choice for `slots` streams over all GPUs and `threads` host threads: as the CPU path's
// default buffers, two items per host thread (one in a host stage, one queued for it or on the
// GPU), so tokens = 2 x threads, in whole buffers per stream from 2 (double buffering) to 16, and
// no more pinned memory than min(host memory / 8, 8 GiB) (never fewer than 2 per stream).
GpuTokens choose_gpu_tokens(int slots, int threads, int64_t item_bytes, uint64_t host_memory_bytes);

// The same for a run: the configured value when set; else item_bytes from the first input file's
// largest plane (a tile with its halo where the run tiles it) and the host's physical memory.
GpuTokens gpu_tokens_for_run(const RunContext& run, const EngineConfig& engine, int slots, const ItemSource& source,
                             int threads);

}  // namespace imflow
