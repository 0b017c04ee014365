// choose_gpu_tokens and gpu_tokens_for_run (gpu_tokens.hpp).
#include "gpu_tokens.hpp"

#include <unistd.h>

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "imflow/io/input_format.hpp"
#include "imflow/pipeline.hpp"
#include "item_source.hpp"
#include "stages.hpp"
#include "tiled_image.hpp"

namespace imflow {

namespace {
constexpr int kMinPerStream = 2;
constexpr int kMaxPerStream = 16;
constexpr uint64_t kMaxPinnedBytes = uint64_t{8} << 30;

// float32 bytes of the largest plane of `path` as the run holds it on the host (0 when unknown).
int64_t largest_item_bytes(const std::filesystem::path& path, const TilingPlan* tiling) {
  const InputFormat* format = input_format_for(path);
  if (format == nullptr) return 0;
  int64_t largest = 0;
  try {
    for (const PlaneInfo& plane : format->scan(path)) {
      int64_t width = plane.width, height = plane.height;
      if (tiling != nullptr && tiling->size > 0 && (width > tiling->size || height > tiling->size)) {
        width = std::min(width, tiling->size + 2 * tiling->halo);
        height = std::min(height, tiling->size + 2 * tiling->halo);
      }
      largest = std::max(largest, width * height * int64_t{4});
    }
  } catch (const std::exception&) {
    return 0;  // the reader reports the file's problem where it reads it
  }
  return largest;
}
}  // namespace

nlohmann::json GpuTokens::to_json() const {
  return {{"buffers_per_stream", buffers_per_stream}, {"tokens", tokens}, {"item_bytes", item_bytes},
          {"automatic", automatic}, {"reason", reason}};
}

GpuTokens choose_gpu_tokens(int slots, int threads, int64_t item_bytes, uint64_t host_memory_bytes) {
  slots = std::max(slots, 1);
  GpuTokens choice;
  choice.automatic = true;
  choice.item_bytes = item_bytes;
  const int64_t wanted = 2 * int64_t{threads};
  const int per_stream = static_cast<int>(std::clamp<int64_t>((wanted + slots - 1) / slots, kMinPerStream, kMaxPerStream));
  choice.buffers_per_stream = per_stream;
  choice.reason = fmt::format("2 x {} host threads over {} streams", threads, slots);
  const uint64_t budget = std::min(host_memory_bytes / 8, kMaxPinnedBytes);
  if (item_bytes > 0 && host_memory_bytes > 0) {
    const auto fitting = static_cast<int64_t>(budget / (static_cast<uint64_t>(item_bytes) * slots));
    if (fitting < per_stream) {
      choice.buffers_per_stream = static_cast<int>(std::max<int64_t>(fitting, kMinPerStream));
      choice.reason += fmt::format(", cut to {:.1f} GiB of pinned memory for items of {:.1f} MiB",
                                   budget / double(uint64_t{1} << 30), item_bytes / double(1 << 20));
    }
  }
  choice.tokens = int64_t{choice.buffers_per_stream} * slots;
  return choice;
}

GpuTokens gpu_tokens_for_run(const RunContext& run, const EngineConfig& engine, int slots, const ItemSource& source,
                             int threads) {
  if (engine.buffers_per_stream > 0) {
    GpuTokens set;
    set.buffers_per_stream = engine.buffers_per_stream;
    set.tokens = int64_t{engine.buffers_per_stream} * slots;
    set.reason = "set by the pipeline or --buffers-per-stream";
    return set;
  }
  const auto& files = source.file_list();
  const int64_t item_bytes =
      files.empty() ? 0 : largest_item_bytes(files.front(), run.tiles != nullptr ? &run.tiles->plan() : nullptr);
  const uint64_t memory = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
  return choose_gpu_tokens(slots, threads, item_bytes, memory);
}

}  // namespace imflow
