// TokenTuner (token_tuner.hpp): windows of finished items, growth by half up to the ceiling.
#include "token_tuner.hpp"

#include <algorithm>

namespace imflow {

TokenTuner::TokenTuner(int64_t items, int64_t ceiling, double grow_at_in_stages)
    : initial_(items), ceiling_(std::max(items, ceiling)), grow_at_(grow_at_in_stages), items_(items) {
  begin_window();
}

void TokenTuner::begin_window() {
  settling_ = items_;
  window_ = std::max(2 * items_, kMinWindow);
  cycle_sum_ = stage_sum_ = 0.0;
}

std::optional<TokenTuner::Adjustment> TokenTuner::finished(double cycle_seconds, double stage_seconds) {
  std::lock_guard lock(mutex_);
  ++finished_;
  if (items_ >= ceiling_) return std::nullopt;
  if (settling_ > 0) {
    --settling_;
    return std::nullopt;
  }
  cycle_sum_ += cycle_seconds;
  stage_sum_ += stage_seconds;
  if (--window_ > 0) return std::nullopt;
  const double in_stages = cycle_sum_ > 0.0 ? stage_sum_ / cycle_sum_ : 0.0;
  last_in_stages_ = in_stages;
  std::optional<Adjustment> grown;
  if (in_stages >= grow_at_) {
    const int64_t to = std::min(ceiling_, items_ + std::max<int64_t>(items_ / 2, 1));
    grown = Adjustment{finished_, in_stages, items_, to};
    adjustments_.push_back(*grown);
    items_ = to;
  }
  begin_window();
  return grown;
}

int64_t TokenTuner::items() const {
  std::lock_guard lock(mutex_);
  return items_;
}

nlohmann::json TokenTuner::to_json() const {
  std::lock_guard lock(mutex_);
  nlohmann::json adjustments = nlohmann::json::array();
  for (const Adjustment& a : adjustments_) {
    adjustments.push_back({{"after_items", a.after_items}, {"in_stages", a.in_stages}, {"from", a.from}, {"to", a.to}});
  }
  return {{"initial", initial_},
          {"ceiling", ceiling_},
          {"items_at_end", items_},
          {"in_stages_last_window", last_in_stages_ ? nlohmann::json(*last_in_stages_) : nlohmann::json(nullptr)},
          {"adjustments", adjustments}};
}

}  // namespace imflow
