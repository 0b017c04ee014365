// The CUDA flow graph. Pinned work items are the reader's tokens (streams x buffers_per_stream
// per GPU, chosen per run unless set: items_in_flight.hpp); the reader fills one while the GPU works
// on another. The GPU stage (gpu_stage.hpp) takes one item per slot: upload, steps and download
// enqueued on the slot's stream, results collected after its stream callback. With `batch` > 1
// and batchable steps the GPU stage takes batches instead (gpu_batch_graph.cpp).
#include "gpu_graph.hpp"

#include <spdlog/spdlog.h>
#include <tbb/flow_graph.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "cuda/cuda_check.hpp"
#include "cuda/linear_algebra.hpp"
#include "imflow/errors.hpp"
#include "companion_inputs.hpp"
#include "gpu_batch_graph.hpp"
#include "gpu_choice.hpp"
#include "gpu_overlap.hpp"
#include "gpu_resident.hpp"
#include "gpu_slot.hpp"
#include "gpu_stage.hpp"
#include "items_in_flight.hpp"
#include "graph_ends.hpp"
#include "tiled_image.hpp"
#include "token_tuner.hpp"

namespace imflow {

int cuda_devices_available() { return cuda::device_count(); }

GpuSlot::GpuSlot(int device_id, int slot_index, size_t steps) : device(device_id), index(slot_index) {
  cuda::DeviceGuard guard(device);
  stream = cuda::Stream();
  context = std::make_unique<GpuContext>(device, stream.get());
  for (size_t i = 0; i < steps + 3; ++i) marks.emplace_back(true);
  track = "gpu" + std::to_string(device) + " stream " + std::to_string(index);
}

namespace {
cuda::DownloadWants download_wants(const OutputConfig& output, const GpuContext& context) {
  cuda::DownloadWants wants;
  wants.labels = output.wants("labels") && context.has_labels;
  wants.pixels = context.image_modified;
  wants.detection = context.has_detection;
  wants.background_map = output.wants("bgsub") && context.has_background_maps;
  return wants;
}

// Steps before the last step that needs a host phase (Step::needs_host_phase, e.g.
// svd_reconstruct's hybrid) run on the host in the reader, with that step's prepare_host; the GPU
// runs the rest. 0 (all on the GPU) when no step needs one.
size_t first_gpu_step(const Pipeline& pipeline) {
  size_t first = 0;
  for (size_t s = 0; s < pipeline.steps.size(); ++s) {
    if (pipeline.steps[s]->needs_host_phase()) first = s;
  }
  return first;
}

// Whether no host stage reads an item's pixels after the read: every step on the GPU, no
// companion image applied on the host, outputs that are catalogs or label maps. The reader may
// then leave float32 FITS words in the file's byte order for the device to swap.
bool host_reads_no_pixels(const Pipeline& pipeline) {
  if (pipeline.input.has_companions()) return false;
  for (const auto& step : pipeline.steps) {
    if (step->needs_host_phase()) return false;
  }
  for (const std::string& format : pipeline.output.formats) {
    if (format != "csv" && format != "fits" && format != "ldac" && format != "labels") return false;
  }
  return true;
}

void host_phase_stage(RunContext& run, WorkItem& item, size_t first) {
  const auto& steps = run.pipeline.steps;
  if (item.status == ItemStatus::failed || first >= steps.size() || !steps[first]->needs_host_phase()) return;
  for (size_t s = 0; s <= first; ++s) {
    StageTimer timer(run, item, steps[s]->name() + (s == first ? " (host)" : ""), worker_track("cpu"));
    try {
      if (s < first) steps[s]->run_cpu(item);
      else steps[s]->prepare_host(item);
    } catch (const std::exception& error) {
      item.fail(item_name(item.ref) + ": " + step_failure(steps[s]->name(), error, item.ref.path));
      return;
    }
  }
}

// Enqueue upload, every step and the download on the slot's stream; never waits (except for a
// GPU-resident image, whose strips are read and copied in before anything is enqueued).
void enqueue_item(RunContext& run, GpuSlot& slot, WorkItem& item) {
  cuda::DeviceGuard guard(slot.device);
  GpuContext& context = *slot.context;
  const bool resident = item.ref.resident_rows > 0;
  if (resident) upload_resident_plane(run, context, item);
  slot.marks[0].record(slot.stream);
  if (!resident) cuda::enqueue_upload(context, item);
  slot.marks[1].record(slot.stream);
  const auto& steps = run.pipeline.steps;
  const size_t first = first_gpu_step(run.pipeline);  // steps before it ran on the host
  for (size_t s = 0; s < steps.size(); ++s) {
    if (s >= first) {
      enqueue_step(steps[s]->name(), [&] {
        if (item.ref.tiled) tile_run_cuda(*steps[s], item, context);  // a tile (docs/tiling.md)
        else steps[s]->run_cuda(item, context);
      }, item.ref.path);
    }
    slot.marks[2 + s].record(slot.stream);
  }
  cuda::DownloadWants wants = download_wants(run.pipeline.output, context);
  if (item.ref.tiled) wants.labels = context.has_labels;  // the host merges tiles from their labels
  // The CSV rows as text from the device (cuda/catalog_text.hpp): not a tile's catalog (merged on
  // the host first) nor one with a flag map's columns.
  wants.csv_text = run.pipeline.output.wants("csv") && !item.ref.tiled && item.flag_map.empty();
  if (!item.flag_map.empty()) wants.labels = context.has_labels;  // input.flags: its columns on the host
  if (resident) wants = cuda::DownloadWants{};  // results and catalog rows only: the outputs are catalogs
  cuda::enqueue_download(context, wants);
  slot.marks[2 + steps.size()].record(slot.stream);
}

// After completion: stage times from the events (into the item, the trace and the overlap
// accounting), then the results into the item.
void collect_item(RunContext& run, GpuSlot& slot, WorkItem& item, GpuTimeline& timeline) {
  cuda::DeviceGuard guard(slot.device);
  for (const StageSpan& stage : timeline.add_stages(slot.device, slot.marks, step_names(run.pipeline))) {
    item.times.push_back({stage.name, (stage.end_us - stage.start_us) * 1e-6});
    if (run.trace != nullptr) {
      run.trace->add(slot.track, stage.name, stage.start_us, stage.end_us - stage.start_us,
                     "{\"item\":" + std::to_string(item.ref.index) + "}");
    }
  }
  cuda::collect_results(*slot.context, item);
  catalog_flag_map(item);
  timeline.count_item(slot.device, item.input_bytes);
}

void fail_on_device(RunContext& run, WorkItem& item, GpuSlot& slot, const std::string& what, cudaError_t code) {
  item.fail(item_name(item.ref) + ": " + device_failure(slot.device, what, code));
  halt_if_sticky(run, slot.device, what, code);
}

// One GPU-resident image per device at a time: it may fill most of the device's memory. Its
// device buffers are given back once it has gone on to be written (GpuSlot::after_hand_on), or
// by the device's next resident image if that comes first.
struct ResidentDevice {
  std::mutex lock;
  GpuContext* holding = nullptr;  // the context whose buffers hold the last resident image
};

// Under resident.lock: the buffers of resident.holding given back (traced as "release"). A CUDA
// error is logged (the image's results were collected before) and halts the run if sticky.
void release_resident_buffers(RunContext& run, ResidentDevice& resident, int device) {
  if (resident.holding == nullptr) return;
  const auto start = Trace::Clock::now();
  try {
    cuda::release_image_buffers(*std::exchange(resident.holding, nullptr));
  } catch (const cuda::CudaError& error) {
    spdlog::error("GPU {}: giving back a GPU-resident image's buffers: {}", device, error.what());
    halt_if_sticky(run, device, error.what(), error.code());
  }
  if (run.trace != nullptr) {
    run.trace->add(worker_track("resident"), "release", run.trace->to_us(start),
                   std::chrono::duration<double, std::micro>(Trace::Clock::now() - start).count(), "{}");
  }
}

// A GPU-resident image (docs/tiling.md), synchronously in the GPU node: strips read and copied
// in, the steps, the results; its buffers are given back after it has gone on.
void run_resident_item(RunContext& run, GpuSlot& slot, WorkItem& item, GpuTimeline& timeline, ResidentDevice& resident) {
  std::lock_guard lock(resident.lock);
  cuda::DeviceGuard guard(slot.device);
  release_resident_buffers(run, resident, slot.device);  // the previous image's, if not yet
  // Meanwhile, on a thread of its own, the rows its catalog is copied into on all threads.
  std::future<Catalog> rows_ahead;
  if (run.pipeline.output.wants_catalog_files()) {
    rows_ahead = std::async(std::launch::async, catalog_rows_ahead, expected_catalog_rows(item.ref.core.width * item.ref.core.height));
  }
  resident.holding = slot.context.get();
  slot.after_hand_on = [&run, &resident, &slot] {
    std::lock_guard lock(resident.lock);
    if (resident.holding == slot.context.get()) release_resident_buffers(run, resident, slot.device);
  };
  try {
    enqueue_item(run, slot, item);
    {
      StageTimer timer(run, item, "gpu wait", worker_track("resident"));
      slot.stream.synchronize();
    }
    StageTimer timer(run, item, "collect", worker_track("resident"));
    cuda::remeasure_if_overflowed(*slot.context);  // the host has no pixels to measure on
    if (rows_ahead.valid()) slot.context->rows_ahead = rows_ahead.get();
    collect_item(run, slot, item, timeline);
  } catch (const cuda::CudaError& error) {
    IMFLOW_CUDA_LOG(cudaStreamSynchronize(slot.stream));
    fail_on_device(run, item, slot, error.what(), error.code());
  } catch (const StepFailure& error) {
    IMFLOW_CUDA_LOG(cudaStreamSynchronize(slot.stream));
    item.fail(item_name(item.ref) + ": " + error.what());
  } catch (const std::bad_alloc&) {
    item.fail(item_name(item.ref) + ": out of host memory while reading it into the GPU");
  } catch (const std::exception& error) {
    item.fail(error.what());  // read errors name the file
  }
}

// One item per slot. The item graph's stage choices: a failed item (or any once the run halted)
// and a GPU-resident image (processed in the GPU node itself) are handed on at once; the others
// are enqueued, then collected after their stream callback.
void run_gpu_item_graph(RunContext& run, ItemSource& source, int threads, const EngineConfig& engine,
                        const std::vector<int>& devices, std::vector<std::unique_ptr<GpuSlot>>& slots,
                        GpuTimeline& timeline, int64_t plane_bytes) {
  std::map<int, ResidentDevice> resident_devices;
  for (int device : devices) resident_devices[device];
  struct ForgetAfterHandOn {  // what a cancelled graph left refers to this run
    const std::vector<std::unique_ptr<GpuSlot>>& slots;
    ~ForgetAfterHandOn() {
      for (const auto& slot : slots) slot->after_hand_on = nullptr;
    }
  } forget_after_hand_on{slots};
  if (run.tiles != nullptr)
    run.tiles->set_resident_pixels(resident_pixel_limit(devices, run.tiles->plan().resident_bytes_per_pixel));
  const size_t first_gpu = first_gpu_step(run.pipeline);

  tbb::flow::graph graph;
  GraphEnds ends(graph, run, source, threads, [&](WorkItem& item) { host_phase_stage(run, item, first_gpu); });
  GpuStageChoices<WorkItem*> choices;
  choices.hand_on_now = [&](GpuSlot& slot, WorkItem* item) {
    const bool skip = item->status == ItemStatus::failed || run.halt;
    if (skip && item->status != ItemStatus::failed) item->fail(item_name(item->ref) + ": not processed: " + run.fatal_reason());
    if (skip) return true;
    if (item->ref.resident_rows > 0) {  // processed here, then handed on at once
      run_resident_item(run, slot, *item, timeline, resident_devices.at(slot.device));
      return true;
    }
    return false;
  };
  choices.enqueue = [&](GpuSlot& slot, WorkItem* item) { enqueue_item(run, slot, *item); };
  choices.fail = [&](GpuSlot& slot, WorkItem* item, const std::string& what, cudaError_t code) {
    fail_on_device(run, *item, slot, what, code);
  };
  choices.collect = [&](GpuSlot& slot, WorkItem* item, cudaError_t status) {
    if (item->status == ItemStatus::failed) return;
    if (status != cudaSuccess) {
      fail_on_device(run, *item, slot, cuda_error_text(status), status);
      return;
    }
    try {
      collect_item(run, slot, *item, timeline);
      if (item->ref.tiled) tile_after_gpu(run, *item);
    } catch (const cuda::CudaError& error) {
      fail_on_device(run, *item, slot, error.what(), error.code());
    } catch (const std::exception& error) {
      item->fail(item_name(item->ref) + ": " + error.what());
    }
  };
  GpuStage<WorkItem*> gpu(graph, threads, slots, std::move(choices));
  tbb::flow::make_edge(ends.read_items(), gpu.units());
  tbb::flow::make_edge(gpu.items(), ends.writer());
  gpu.start();
  const ItemsInFlight tokens = gpu_tokens_for_run(engine, static_cast<int>(slots.size()), threads, plane_bytes);
  spdlog::info("{} pinned work items: {} per stream ({})", tokens.items, tokens.per_stream, tokens.reason);
  run.summary.set("gpu_tokens", tokens.to_json());
  run.float32_swap_on_device = host_reads_no_pixels(run.pipeline);
  // An automatic pool grows while it limits the run, within the pinned budget it was chosen in.
  std::optional<TokenTuner> tuner;
  if (tokens.automatic) tuner.emplace(tokens.items, gpu_token_ceiling(tokens, threads, plane_bytes, host_memory_bytes()));
  ends.start(static_cast<size_t>(tokens.items), cuda::pinned_allocator(), tuner ? &*tuner : nullptr);
  graph.wait_for_all();
  if (tuner) {
    nlohmann::json chosen = tokens.to_json();
    chosen["items_at_end"] = tuner->items();
    chosen["tuning"] = tuner->to_json();
    run.summary.set("gpu_tokens", chosen);
  }
}
}  // namespace

std::vector<int> chosen_devices(const EngineConfig& engine) {
  const int available = cuda::device_count();
  std::vector<int> devices = engine.devices;
  if (devices.empty()) {
    for (int d = 0; d < available; ++d) devices.push_back(d);
  }
  for (int d : devices) {
    if (d >= available) {
      throw ConfigError("devices: CUDA device " + std::to_string(d) + " does not exist (" + std::to_string(available) +
                        " available)");
    }
  }
  return devices;
}

void run_gpu_graph(RunContext& run, ItemSource& source, int threads, const EngineConfig& configured) {
  using Clock = std::chrono::steady_clock;
  // The first input's plane: the batch size and the pinned work items' count are chosen from it.
  const int64_t plane_bytes = first_plane_bytes(source.file_list(), run.tiles != nullptr ? &run.tiles->plan() : nullptr);
  const auto setup_start = Clock::now();
  // cuBLAS and cuSOLVER (~0.1 s to open) meanwhile, when a step will call them.
  std::future<void> linear_algebra;
  const auto& steps = run.pipeline.steps;
  if (std::any_of(steps.begin(), steps.end(), [](const auto& step) { return step->uses_gpu_linear_algebra(); })) {
    linear_algebra = std::async(std::launch::async, cuda::open_linear_algebra);
  }
  const std::vector<int> devices = chosen_devices(configured);
  GpuTimeline timeline(devices);
  std::vector<std::unique_ptr<GpuSlot>> slots;
  for (int device : devices) {
    for (int s = 0; s < configured.streams; ++s) slots.push_back(std::make_unique<GpuSlot>(device, s, run.pipeline.steps.size()));
  }
  EngineConfig engine = configured;  // with the batch size resolved
  const GpuBatchChoice batch = gpu_batch_for_run(configured, static_cast<int>(slots.size()), plane_bytes);
  engine.batch = batch.batch;
  const auto slots_ready = Clock::now();
  make_device_choices(run, source.file_list(), *slots.front(), threads, engine);  // e.g. svd_reconstruct solver: auto
  // Fixed costs before the first item: CUDA contexts, streams and buffers; measured choices.
  run.summary.set("gpu_setup_seconds", {{"slots", std::chrono::duration<double>(slots_ready - setup_start).count()},
                                        {"device_choices", std::chrono::duration<double>(Clock::now() - slots_ready).count()}});
  const bool batched = batchable_pipeline(run.pipeline, engine);
  if (!batched) slots.front()->batch.reset();  // a batched trial's buffers, not needed after all
  run.summary.set("gpu_batch", batched ? engine.batch : 1);
  if (batched) {
    spdlog::info("GPU batches of up to {} items ({})", batch.batch, batch.reason);
    run.summary.set("gpu_batch_choice", batch.to_json());
  }
  timeline.start(slots, run.trace);
  if (batched) run_gpu_batch_graph(run, source, threads, engine, slots, timeline);
  else run_gpu_item_graph(run, source, threads, engine, devices, slots, timeline, plane_bytes);
  for (auto& slot : slots) IMFLOW_CUDA_LOG(cudaStreamSynchronize(slot->stream));
  run.summary.set("gpu", timeline.summary(slots));
}

}  // namespace imflow
