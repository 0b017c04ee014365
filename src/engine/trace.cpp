// Trace: collects complete events and writes the Chrome trace JSON format.
#include "imflow/trace.hpp"

#include <nlohmann/json.hpp>

#include "imflow/io/atomic_file.hpp"

namespace imflow {

Trace::Trace() : start_(Clock::now()) {}

double Trace::now_us() const { return to_us(Clock::now()); }

double Trace::to_us(Clock::time_point t) const { return std::chrono::duration<double, std::micro>(t - start_).count(); }

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

}  // namespace imflow
