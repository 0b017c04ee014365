// Work items in flight per run (items_in_flight.hpp).
#include "items_in_flight.hpp"

#include <unistd.h>

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "imflow/io/input_format.hpp"
#include "imflow/pipeline.hpp"
#include "imflow/tiling.hpp"

namespace imflow {

namespace {
constexpr int kMinPerStream = 2;
constexpr int kMaxPerStream = 16;
constexpr uint64_t kMaxPinnedBytes = uint64_t{8} << 30;

double mebibytes(double bytes) { return bytes / double(1 << 20); }

// The pinned memory a run's items may hold: an eighth of the host's memory, at most 8 GiB.
uint64_t pinned_budget(uint64_t host_memory) { return std::min(host_memory / 8, kMaxPinnedBytes); }
}  // namespace

nlohmann::json ItemsInFlight::to_json() const {
  nlohmann::json json = {{"items", items}, {"item_bytes", item_bytes}, {"automatic", automatic}, {"reason", reason}};
  if (per_stream > 0) json["buffers_per_stream"] = per_stream;
  return json;
}

int64_t first_plane_bytes(const std::vector<std::filesystem::path>& files, const TilingPlan* tiling) {
  if (files.empty()) return 0;
  const InputFormat* format = input_format_for(files.front());
  if (format == nullptr) return 0;
  int64_t largest = 0;
  try {
    for (const PlaneInfo& plane : format->scan(files.front())) {
      int64_t width = plane.width, height = plane.height;
      if (tiling != nullptr && tiles_image(*tiling, width, height) && file_reads_by_tiles(files.front())) {
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

uint64_t host_memory_bytes() {
  return static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
}

ItemsInFlight choose_gpu_tokens(int slots, int threads, int64_t plane_bytes, uint64_t host_memory) {
  slots = std::max(slots, 1);
  ItemsInFlight choice;
  choice.automatic = true;
  choice.item_bytes = plane_bytes;
  const int64_t wanted = 2 * int64_t{threads};
  choice.per_stream = static_cast<int>(std::clamp<int64_t>((wanted + slots - 1) / slots, kMinPerStream, kMaxPerStream));
  choice.reason = fmt::format("2 x {} host threads over {} streams", threads, slots);
  const uint64_t budget = pinned_budget(host_memory);
  if (plane_bytes > 0 && host_memory > 0) {
    const auto fitting = static_cast<int64_t>(budget / (static_cast<uint64_t>(plane_bytes) * slots));
    if (fitting < choice.per_stream) {
      choice.per_stream = static_cast<int>(std::max<int64_t>(fitting, kMinPerStream));
      choice.reason += fmt::format(", cut to {:.1f} GiB of pinned memory for items of {:.1f} MiB",
                                   budget / double(uint64_t{1} << 30), mebibytes(plane_bytes));
    }
  }
  choice.items = int64_t{choice.per_stream} * slots;
  return choice;
}

int64_t gpu_token_ceiling(const ItemsInFlight& chosen, int threads, int64_t plane_bytes, uint64_t host_memory) {
  if (plane_bytes <= 0 || host_memory == 0) return chosen.items;
  const uint64_t budget = pinned_budget(host_memory);
  const auto fitting = static_cast<int64_t>(budget / static_cast<uint64_t>(plane_bytes));
  return std::max(chosen.items, std::min(4 * int64_t{threads}, fitting));
}

ItemsInFlight choose_cpu_buffers(int threads, int64_t plane_bytes, int64_t budget_bytes) {
  ItemsInFlight choice;
  choice.automatic = true;
  choice.item_bytes = plane_bytes / 4 * kCpuBytesPerPixel;
  choice.items = 2 * int64_t{std::max(threads, 1)};
  choice.reason = fmt::format("2 x {} threads", threads);
  if (choice.item_bytes > 0 && budget_bytes > 0 && choice.items * choice.item_bytes > budget_bytes) {
    choice.items = std::max<int64_t>(1, budget_bytes / choice.item_bytes);
    choice.reason += fmt::format(", cut to a memory budget of {:.0f} MiB for items of about {:.0f} MiB",
                                 mebibytes(budget_bytes), mebibytes(choice.item_bytes));
  }
  return choice;
}

GpuBatchChoice choose_gpu_batch(int slots, int64_t plane_bytes, uint64_t host_memory) {
  GpuBatchChoice choice;
  choice.automatic = true;
  if (plane_bytes <= 0) {
    choice.batch = kGpuBatchUnknownSize;
    choice.reason = "the first input's size is unknown";
    return choice;
  }
  choice.batch = static_cast<int>(std::clamp<int64_t>(kGpuBatchBytes / plane_bytes, 1, kMaxGpuBatch));
  choice.reason = fmt::format("{:.0f} MiB of {:.2f} MiB items, at most {}", mebibytes(kGpuBatchBytes),
                              mebibytes(plane_bytes), kMaxGpuBatch);
  const uint64_t budget = pinned_budget(host_memory);
  const uint64_t batches = static_cast<uint64_t>(std::max(slots, 1)) + 1;
  const auto fitting = static_cast<int64_t>(budget / (static_cast<uint64_t>(plane_bytes) * batches));
  if (host_memory > 0 && fitting < choice.batch) {
    choice.batch = static_cast<int>(std::max<int64_t>(fitting, 1));
    choice.reason += fmt::format(", cut to {:.1f} GiB of pinned memory over {} batches", budget / double(uint64_t{1} << 30),
                                 batches);
  }
  return choice;
}

ItemsInFlight gpu_batch_items(int batch, int slots, int threads) {
  slots = std::max(slots, 1);
  ItemsInFlight pool;
  pool.automatic = true;
  pool.items = int64_t{batch} * (slots + 1) + 2 * int64_t{threads};
  pool.per_stream = static_cast<int>((pool.items + slots - 1) / slots);
  pool.reason = fmt::format("batches of {} for {} streams and one being gathered, 2 x {} host threads", batch, slots, threads);
  return pool;
}

GpuBatchChoice gpu_batch_for_run(const EngineConfig& engine, int slots, int64_t plane_bytes) {
  if (engine.batch > 0) return {engine.batch, false, "set by the pipeline or --batch"};
  return choose_gpu_batch(slots, plane_bytes, host_memory_bytes());
}

ItemsInFlight gpu_tokens_for_run(const EngineConfig& engine, int slots, int threads, int64_t plane_bytes) {
  if (engine.buffers_per_stream > 0) {
    ItemsInFlight set;
    set.per_stream = engine.buffers_per_stream;
    set.items = int64_t{engine.buffers_per_stream} * slots;
    set.reason = "set by the pipeline or --buffers-per-stream";
    return set;
  }
  return choose_gpu_tokens(slots, threads, plane_bytes, host_memory_bytes());
}

ItemsInFlight cpu_buffers_for_run(const EngineConfig& engine, int threads, int64_t plane_bytes) {
  if (engine.buffers > 0) {
    ItemsInFlight set;
    set.items = engine.buffers;
    set.reason = "set by the pipeline or --buffers";
    return set;
  }
  return choose_cpu_buffers(threads, plane_bytes, engine.memory_mb << 20);
}

}  // namespace imflow
