// Trace: collects complete events and writes the Chrome trace JSON format; TraceStage/TracePart:
// a stage's parts, on the thread that times it or on helpers.
#include "imflow/trace.hpp"

#include <nlohmann/json.hpp>
#include <tbb/task_arena.h>

#include <cstdio>
#include <ctime>

#include "imflow/io/atomic_file.hpp"

namespace imflow {

namespace {
thread_local TraceStage* open_stage = nullptr;
}  // namespace

Trace::Trace() : start_(Clock::now()) {}

double Trace::now_us() const { return to_us(Clock::now()); }

double Trace::to_us(Clock::time_point t) const { return std::chrono::duration<double, std::micro>(t - start_).count(); }

double Trace::thread_cpu_us() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) * 1e-3;
}

std::string Trace::with_cpu_us(std::string args_json, double cpu_start_us) {
  char cpu[48];
  std::snprintf(cpu, sizeof cpu, "\"cpu_us\":%.1f", thread_cpu_us() - cpu_start_us);
  args_json.insert(args_json.size() - 1, args_json.size() > 2 ? std::string(",") + cpu : std::string(cpu));
  return args_json;
}

int Trace::track_id(const std::string& track) {
  auto it = tracks_.find(track);
  if (it != tracks_.end()) return it->second;
  const int id = static_cast<int>(tracks_.size()) + 1;
  tracks_.emplace(track, id);
  return id;
}

void Trace::add(const std::string& track, const std::string& name, double start_us, double duration_us,
                const std::string& args_json) {
  std::lock_guard lock(mutex_);
  events_.push_back({track_id(track), name, start_us, duration_us, args_json});
}

void Trace::write(const std::filesystem::path& path) const {
  std::lock_guard lock(mutex_);
  nlohmann::json events = nlohmann::json::array();
  for (const auto& [track, id] : tracks_) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", id}, {"args", {{"name", track}}}});
    events.push_back(
        {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", id}, {"args", {{"sort_index", id}}}});
  }
  for (const Event& event : events_) {
    nlohmann::json entry = {{"name", event.name}, {"ph", "X"},          {"pid", 1},
                            {"tid", event.tid},   {"ts", event.start_us}, {"dur", event.duration_us}};
    if (!event.args_json.empty()) entry["args"] = nlohmann::json::parse(event.args_json);
    events.push_back(std::move(entry));
  }
  nlohmann::json root = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  write_text_atomic(path, root.dump() + "\n");
}

TraceStage::TraceStage(Trace* trace, const std::string& track, int64_t item)
    : trace_(trace), track_(track), item_(item), thread_(std::this_thread::get_id()), outer_(open_stage) {
  open_stage = this;
}

TraceStage::~TraceStage() { open_stage = outer_; }

const TraceStage* TraceStage::open() {
  return open_stage != nullptr && open_stage->trace_ != nullptr ? open_stage : nullptr;
}

TracePart::TracePart(const char* name) : TracePart(name, TraceStage::open()) {}

TracePart::TracePart(const char* name, const TraceStage* stage)
    : name_(name), stage_(stage != nullptr && stage->trace_ != nullptr ? stage : nullptr) {
  if (stage_ == nullptr) return;
  start_ = Trace::Clock::now();
  cpu_start_us_ = Trace::thread_cpu_us();
}

TracePart::~TracePart() {
  if (stage_ == nullptr) return;
  Trace& trace = *stage_->trace_;
  const double start = trace.to_us(start_);
  const bool on_stage_thread = std::this_thread::get_id() == stage_->thread_;
  const std::string helper =
      on_stage_thread ? std::string() : "helper #" + std::to_string(tbb::this_task_arena::current_thread_index());
  trace.add(on_stage_thread ? stage_->track_ : helper, name_, start, trace.now_us() - start,
            Trace::with_cpu_us("{\"item\":" + std::to_string(stage_->item_) + "}", cpu_start_us_));
}

}  // namespace imflow
