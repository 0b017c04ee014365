// Grows a run's pool of work items while the pool, not a stage, limits the run: every finished
// item reports how long its last cycle through the pool took and how much of it was spent in
// stages; when over a window of items nearly all of it was (no stage kept them waiting: Little's
// law's latency-bound case), the pool grows by half, up to a ceiling (docs/pipeline.md).
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace imflow {

class TokenTuner {
 public:
  struct Adjustment {
    int64_t after_items = 0;     // finished items when the pool grew
    double in_stages = 0.0;      // the window's stage seconds over its cycle seconds
    int64_t from = 0, to = 0;    // pool size before and after
  };
  // Items spending at least this share of their cycles in stages make the pool grow.
  static constexpr double kGrowAtInStages = 0.75;
  // Windows hold at least this many items (besides twice the pool).
  static constexpr int64_t kMinWindow = 16;

  // A pool of `items` that may grow to `ceiling` (no growth when ceiling <= items).
  TokenTuner(int64_t items, int64_t ceiling, double grow_at_in_stages = kGrowAtInStages);

  // One item came back to the pool: `cycle_seconds` since it last did (or since it was made), of
  // which `stage_seconds` in stages. Returns the adjustment when the pool is to grow (the caller
  // adds `to - from` items). Thread-safe. The pool first settles for as many items as it holds,
  // then a window of twice as many (at least kMinWindow) is measured; again after each growth.
  std::optional<Adjustment> finished(double cycle_seconds, double stage_seconds);

  int64_t items() const;
  // {"initial", "ceiling", "items_at_end", "in_stages_last_window", "adjustments": [...]}.
  nlohmann::json to_json() const;

 private:
  void begin_window();

  mutable std::mutex mutex_;
  const int64_t initial_, ceiling_;
  const double grow_at_;
  int64_t items_;
  int64_t finished_ = 0;
  int64_t settling_ = 0;  // items still to pass before the window
  int64_t window_ = 0;    // items the window still takes
  double cycle_sum_ = 0.0, stage_sum_ = 0.0;
  std::optional<double> last_in_stages_;
  std::vector<Adjustment> adjustments_;
};

}  // namespace imflow
