// make_device_choices (gpu_choice.hpp): one sample item, each choosing step measured on it.
#include "gpu_choice.hpp"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "item_source.hpp"

namespace imflow {

void make_device_choices(RunContext& run, const std::vector<std::filesystem::path>& files, GpuSlot& slot, int threads,
                         const EngineConfig& engine) {
  const auto& steps = run.pipeline.steps;
  size_t last = steps.size();
  for (size_t s = 0; s < steps.size(); ++s) {
    if (steps[s]->chooses_on_device()) last = s;
  }
  if (last == steps.size() || files.empty()) return;
  ItemSource first({files.front()}, run.pipeline.input.dir);
  ItemRef ref;
  if (!first.next(ref)) return;
  WorkItem sample;
  read_stage(run, sample, ref);
  if (sample.status == ItemStatus::failed) {
    spdlog::warn("{}: cannot measure the steps' automatic choices on it ({}); keeping their defaults",
                 item_name(sample.ref), sample.error);
    return;
  }
  nlohmann::json choices = nlohmann::json::array();
  for (size_t s = 0; s <= last; ++s) {
    try {
      if (steps[s]->chooses_on_device()) {
        nlohmann::json choice = steps[s]->choose_on_device(sample, *slot.context, slot.batch, threads, engine.batch);
        if (!choice.is_null()) choices.push_back(std::move(choice));
      }
      if (s < last) steps[s]->run_cpu(sample);
    } catch (const std::exception& error) {
      spdlog::warn("step {}: the measured choice on {} failed ({}); keeping the defaults", steps[s]->name(),
                   item_name(sample.ref), error.what());
      break;
    }
  }
  if (!choices.empty()) run.summary.set("device_choices", choices);
}

}  // namespace imflow
