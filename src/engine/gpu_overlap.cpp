// GpuTimeline: epochs, intervals, and the copy/compute overlap figures of the run summary.
#include "gpu_overlap.hpp"

#include <algorithm>

#include "cuda/cuda_check.hpp"
#include "gpu_slot.hpp"

namespace imflow {

std::vector<std::pair<double, double>> merge_intervals(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& interval : intervals) {
    if (!merged.empty() && interval.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, interval.second);
    } else {
      merged.push_back(interval);
    }
  }
  return merged;
}

double covered_length(const std::vector<std::pair<double, double>>& merged, double start, double end) {
  double covered = 0.0;
  auto it = std::lower_bound(merged.begin(), merged.end(), std::pair{start, start},
                             [](const auto& a, const auto& b) { return a.second < b.first; });
  for (; it != merged.end() && it->first < end; ++it) {
    covered += std::max(0.0, std::min(end, it->second) - std::max(start, it->first));
  }
  return covered;
}

GpuTimeline::GpuTimeline(std::vector<int> devices)
    : devices_(std::move(devices)),
      items_(devices_.size(), 0),
      bytes_(devices_.size(), 0),
      epoch_us_(devices_.size(), 0.0),
      intervals_(devices_.size()) {
  for (int device : devices_) {
    cuda::DeviceGuard guard(device);
    epochs_.emplace_back(true);
  }
}

size_t GpuTimeline::slot_of(int device) const {
  return static_cast<size_t>(std::find(devices_.begin(), devices_.end(), device) - devices_.begin());
}

void GpuTimeline::count_item(int device, int64_t bytes) {
  std::lock_guard lock(mutex_);
  items_[slot_of(device)] += 1;
  bytes_[slot_of(device)] += bytes;
}

void GpuTimeline::start(const std::vector<std::unique_ptr<GpuSlot>>& slots, const Trace* trace) {
  for (size_t d = 0; d < epochs_.size(); ++d) {
    for (const auto& slot : slots) {
      if (slot->device != devices_[d]) continue;
      cuda::DeviceGuard guard(slot->device);
      epochs_[d].record(slot->stream);
      epochs_[d].synchronize();
      epoch_us_[d] = trace != nullptr ? trace->now_us() : 0.0;
      break;
    }
  }
}

std::vector<std::string> step_names(const Pipeline& pipeline) {
  std::vector<std::string> names;
  for (const auto& step : pipeline.steps) names.push_back(step->name());
  return names;
}

std::vector<StageSpan> GpuTimeline::add_stages(int device, const std::vector<cuda::Event>& marks,
                                               const std::vector<std::string>& step_names) {
  const double base_us = epoch_us(device);
  auto at_us = [&](size_t mark) { return base_us + 1000.0 * cuda::Event::elapsed_ms(epoch(device), marks[mark]); };
  std::vector<StageSpan> spans;
  spans.push_back({"h2d", GpuInterval::copy_in, 0, 0});
  for (const auto& name : step_names) spans.push_back({name, GpuInterval::compute, 0, 0});
  spans.push_back({"d2h", GpuInterval::copy_out, 0, 0});
  for (size_t i = 0; i < spans.size(); ++i) {
    spans[i].start_us = at_us(i);
    spans[i].end_us = at_us(i + 1);
    add(device, {spans[i].kind, spans[i].start_us, spans[i].end_us});
  }
  return spans;
}

void GpuTimeline::add(int device, GpuInterval interval) {
  std::lock_guard lock(mutex_);
  intervals_[slot_of(device)].push_back(interval);
}

nlohmann::json GpuTimeline::summary(const std::vector<std::unique_ptr<GpuSlot>>& slots) const {
  std::lock_guard lock(mutex_);
  nlohmann::json devices = nlohmann::json::array();
  double copy_total = 0.0, copy_overlapped = 0.0;
  for (size_t d = 0; d < intervals_.size(); ++d) {
    std::vector<std::pair<double, double>> by_kind[3];
    double busy[3] = {0, 0, 0};
    for (const auto& interval : intervals_[d]) {
      busy[interval.kind] += interval.end_us - interval.start_us;
      by_kind[interval.kind].emplace_back(interval.start_us, interval.end_us);
    }
    // The union of each kind's intervals: time with at least one copy (or kernel) of that kind
    // in flight, at most the wall time however many streams queue behind the copy engine.
    auto union_length = [](const std::vector<std::pair<double, double>>& intervals) {
      double length = 0.0;
      for (const auto& [start, end] : merge_intervals(intervals)) length += end - start;
      return length;
    };
    const auto merged = merge_intervals(by_kind[GpuInterval::compute]);
    double overlapped[3] = {0, 0, 0};
    for (const auto& interval : intervals_[d]) {
      if (interval.kind != GpuInterval::compute) {
        overlapped[interval.kind] += covered_length(merged, interval.start_us, interval.end_us);
      }
    }
    double kernel_union = 0.0;
    for (const auto& [start, end] : merged) kernel_union += end - start;
    const double h2d_union = union_length(by_kind[GpuInterval::copy_in]);
    const double d2h_union = union_length(by_kind[GpuInterval::copy_out]);
    auto fraction = [](double part, double whole) { return whole > 0 ? part / whole : 0.0; };
    int streams = 0;
    for (const auto& slot : slots) streams += slot->device == devices_[d];
    devices.push_back({{"device", devices_[d]},
                       {"name", cuda::device_name(devices_[d])},
                       {"streams", streams},
                       {"items", items_[d]},
                       {"input_megabytes", bytes_[d] / 1e6},
                       {"h2d_seconds", busy[GpuInterval::copy_in] * 1e-6},
                       {"h2d_busy_seconds", h2d_union * 1e-6},
                       {"kernel_seconds", busy[GpuInterval::compute] * 1e-6},
                       {"kernel_busy_seconds", kernel_union * 1e-6},
                       {"d2h_seconds", busy[GpuInterval::copy_out] * 1e-6},
                       {"d2h_busy_seconds", d2h_union * 1e-6},
                       {"h2d_overlap_fraction", fraction(overlapped[GpuInterval::copy_in], busy[GpuInterval::copy_in])},
                       {"d2h_overlap_fraction", fraction(overlapped[GpuInterval::copy_out], busy[GpuInterval::copy_out])}});
    copy_total += busy[GpuInterval::copy_in] + busy[GpuInterval::copy_out];
    copy_overlapped += overlapped[GpuInterval::copy_in] + overlapped[GpuInterval::copy_out];
  }
  return {{"devices", devices}, {"copy_overlap_fraction", copy_total > 0 ? copy_overlapped / copy_total : 0.0}};
}

}  // namespace imflow
