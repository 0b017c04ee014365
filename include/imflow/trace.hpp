// Chrome trace (Perfetto / chrome://tracing) recording: complete events on named tracks.
#pragma once
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace imflow {

class Trace {
 public:
  using Clock = std::chrono::steady_clock;
  Trace();

  // Microseconds since the trace started.
  double now_us() const;
  double to_us(Clock::time_point t) const;
  // A complete event on track `track` (one row in the viewer), times in microseconds.
  void add(const std::string& track, const std::string& name, double start_us, double duration_us,
           const std::string& args_json = "");
  void write(const std::filesystem::path& path) const;

 private:
  struct Event {
    int tid;
    std::string name;
    double start_us, duration_us;
    std::string args_json;
  };
  int track_id(const std::string& track);
  Clock::time_point start_;
  mutable std::mutex mutex_;
  std::map<std::string, int> tracks_;
  std::vector<Event> events_;
};

}  // namespace imflow
