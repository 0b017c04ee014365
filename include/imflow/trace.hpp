// Chrome trace (Perfetto / chrome://tracing) recording: complete events on named tracks, and the
// parts of a stage (TracePart) nested under it.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace imflow {

class Trace {
 public:
  using Clock = std::chrono::steady_clock;
  Trace();

  // Microseconds since the trace started.
  double now_us() const;
  // The calling thread's CPU time in microseconds (CLOCK_THREAD_CPUTIME_ID): an event's "cpu_us"
  // beside its duration tells working from waiting (a lock, I/O, a busy core).
  static double thread_cpu_us();
  // `args_json` ("{...}") with "cpu_us": the thread's CPU time since `cpu_start_us` added.
  static std::string with_cpu_us(std::string args_json, double cpu_start_us);
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

// The stage the calling thread is timing, for the TraceParts inside it: set for its lifetime
// (engine StageTimer), the previous one restored after. Nothing is recorded without a trace.
class TraceStage {
 public:
  TraceStage(Trace* trace, const std::string& track, int64_t item);
  ~TraceStage();
  TraceStage(const TraceStage&) = delete;
  TraceStage& operator=(const TraceStage&) = delete;
  // The stage the calling thread is timing in a traced run, else null: handed to the parts that
  // run on other threads (tbb::parallel_for_each), whose own open stage may be another item's.
  static const TraceStage* open();

 private:
  friend class TracePart;
  Trace* trace_;
  const std::string& track_;
  int64_t item_;
  std::thread::id thread_;
  TraceStage* outer_;
};

// One part of a stage (e.g. the write stage's "catalog csv"): by default of the stage open on
// this thread, an event on the stage's track nested under it; a part of `stage` run on another
// thread goes on that thread's track "helper #N" (N its TBB thread index), with the stage's item.
// Nothing when the run is not traced or no stage is given or open.
class TracePart {
 public:
  explicit TracePart(const char* name);
  TracePart(const char* name, const TraceStage* stage);
  ~TracePart();
  TracePart(const TracePart&) = delete;
  TracePart& operator=(const TracePart&) = delete;

 private:
  const char* name_;
  const TraceStage* stage_;
  Trace::Clock::time_point start_;
  double cpu_start_us_ = 0.0;
};

}  // namespace imflow
