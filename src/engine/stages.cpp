// Shared host stages: read, CPU processing, finish (write + summary + progress).
#include "stages.hpp"

#include <spdlog/spdlog.h>
#include <tbb/task_arena.h>

#include <exception>

#include "imflow/io/input_format.hpp"
#include "writer.hpp"

namespace imflow {

StageTimer::StageTimer(RunContext& run, WorkItem& item, std::string stage, std::string track)
    : run_(run), item_(item), stage_(std::move(stage)), track_(std::move(track)), start_(Trace::Clock::now()) {}

StageTimer::~StageTimer() {
  const auto end = Trace::Clock::now();
  item_.times.push_back({stage_, std::chrono::duration<double>(end - start_).count()});
  if (run_.trace != nullptr) {
    run_.trace->add(track_, stage_, run_.trace->to_us(start_), std::chrono::duration<double, std::micro>(end - start_).count(),
                    "{\"item\":" + std::to_string(item_.ref.index) + "}");
  }
}

std::string item_name(const ItemRef& ref) {
  std::string name = ref.path.string();
  if (ref.hdu > 0) name += "[hdu " + std::to_string(ref.hdu) + "]";
  if (ref.planes > 1) name += "[plane " + std::to_string(ref.plane) + "]";
  return name;
}

std::string worker_track(const std::string& stage) {
  return stage + " #" + std::to_string(tbb::this_task_arena::current_thread_index());
}

void read_stage(RunContext& run, WorkItem& item, ItemRef ref) {
  item.reset(std::move(ref));
  if (!item.ref.error.empty()) {
    item.fail(item.ref.error);
    return;
  }
  StageTimer timer(run, item, "read", worker_track("read"));
  try {
    const InputFormat* format = input_format_for(item.ref.path);
    if (format == nullptr) throw std::runtime_error(item.ref.path.string() + ": unknown file format");
    ReadLimits limits;
    limits.max_pixels = run.pipeline.input.max_pixels;
    item.input_bytes = format->read(item.ref, item.pixels, limits);
  } catch (const std::bad_alloc&) {
    item.fail(item_name(item.ref) + ": out of memory while reading");
  } catch (const std::exception& error) {
    item.fail(error.what());
  }
}

void cpu_process_stage(RunContext& run, WorkItem& item) {
  if (item.status == ItemStatus::failed) return;
  for (const auto& step : run.pipeline.steps) {
    StageTimer timer(run, item, step->name(), worker_track("cpu"));
    try {
      step->run_cpu(item);
    } catch (const std::bad_alloc&) {
      item.fail(item_name(item.ref) + ": step " + step->name() + ": out of memory");
      return;
    } catch (const std::exception& error) {
      item.fail(item_name(item.ref) + ": step " + step->name() + ": " + error.what());
      return;
    }
  }
}

void finish_stage(RunContext& run, WorkItem& item) {
  std::vector<std::filesystem::path> outputs;
  if (item.status != ItemStatus::failed) {
    StageTimer timer(run, item, "write", "write");
    try {
      outputs = write_outputs(item, run.pipeline.output);
      item.status = ItemStatus::ok;
    } catch (const std::exception& error) {
      item.fail(item_name(item.ref) + ": cannot write outputs: " + error.what());
    }
  }
  if (item.status == ItemStatus::failed) {
    spdlog::error("{}", item.error);
    if (run.pipeline.engine.fail_fast) run.halt = true;
  }
  run.summary.add(item, outputs);
  if (run.progress != nullptr) {
    run.progress->item_done(item.ref.last_of_file, item.input_bytes, item.status == ItemStatus::failed);
  }
}

}  // namespace imflow
