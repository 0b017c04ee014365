// RunSummary: per-item records and totals, serialised with nlohmann::json.
#include "imflow/summary.hpp"

#include <sys/resource.h>

#include <cmath>

#include "imflow/io/atomic_file.hpp"

namespace imflow {

namespace {
// JSON has no NaN: write null instead.
nlohmann::json number(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr); }
}  // namespace

int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

nlohmann::json RunSummary::item_record(const WorkItem& item, const std::vector<std::filesystem::path>& outputs) {
  nlohmann::json record;
  record["file"] = item.ref.path.string();
  record["hdu"] = item.ref.hdu;
  record["plane"] = item.ref.plane;
  record["width"] = item.pixels.width();
  record["height"] = item.pixels.height();
  record["status"] = item.status == ItemStatus::ok ? "ok" : "failed";
  if (item.status != ItemStatus::ok) record["error"] = item.error;
  nlohmann::json seconds = nlohmann::json::object();
  for (const auto& time : item.times) seconds[time.stage] = seconds.value(time.stage, 0.0) + time.seconds;
  record["seconds"] = seconds;
  if (item.background) {
    record["background"] = {{"median", number(item.background->median)},
                            {"std", number(item.background->std)},
                            {"iterations", item.background->iterations},
                            {"kept", item.background->kept},
                            {"valid", item.background->valid}};
  }
  if (item.threshold) record["threshold"] = number(*item.threshold);
  if (item.catalog) record["nsources"] = item.catalog->size();
  else if (item.nlabels) record["nsources"] = *item.nlabels;
  for (const auto& [name, value] : item.metrics) record["metrics"][name] = number(value);
  nlohmann::json files = nlohmann::json::array();
  for (const auto& path : outputs) files.push_back(path.string());
  record["outputs"] = files;
  return record;
}

void RunSummary::add_skipped(nlohmann::json previous_record) {
  previous_record["skipped"] = true;
  std::lock_guard lock(*mutex_);
  records_.push_back(std::move(previous_record));
  ++succeeded_;
  ++skipped_;
}

void RunSummary::add(const WorkItem& item, const std::vector<std::filesystem::path>& outputs) {
  nlohmann::json record = item_record(item, outputs);
  std::lock_guard lock(*mutex_);
  records_.push_back(std::move(record));
  if (item.status == ItemStatus::ok) {
    ++succeeded_;
    input_bytes_ += item.input_bytes;
    pixels_ += item.pixels.size();
  } else {
    ++failed_;
  }
  for (const auto& time : item.times) stage_seconds_[time.stage] += time.seconds;
}

void RunSummary::add_record(nlohmann::json record, bool ok, int64_t input_bytes, int64_t pixels,
                            const std::vector<StageTime>& times) {
  std::lock_guard lock(*mutex_);
  records_.push_back(std::move(record));
  if (ok) {
    ++succeeded_;
    input_bytes_ += input_bytes;
    pixels_ += pixels;
  } else {
    ++failed_;
  }
  for (const auto& time : times) stage_seconds_[time.stage] += time.seconds;
}

void RunSummary::set(const std::string& key, nlohmann::json value) {
  std::lock_guard lock(*mutex_);
  context_[key] = std::move(value);
}

void RunSummary::set_stop_reason(const std::string& reason) {
  std::lock_guard lock(*mutex_);
  stop_reason_ = reason;
}

std::string RunSummary::stop_reason() const {
  std::lock_guard lock(*mutex_);
  return stop_reason_;
}

void RunSummary::finish(double wall_seconds) {
  std::lock_guard lock(*mutex_);
  wall_seconds_ = wall_seconds;
}

nlohmann::json RunSummary::to_json() const {
  std::lock_guard lock(*mutex_);
  nlohmann::json out = context_;
  const double wall = wall_seconds_ > 0 ? wall_seconds_ : 1e-9;
  out["totals"] = {{"items", succeeded_ + failed_},
                   {"succeeded", succeeded_},
                   {"failed", failed_},
                   {"wall_seconds", wall_seconds_},
                   {"skipped", skipped_},
                   {"images_per_second", (succeeded_ - skipped_) / wall},
                   {"megabytes_per_second", input_bytes_ / 1e6 / wall},
                   {"input_megabytes", input_bytes_ / 1e6},
                   {"megapixels", pixels_ / 1e6},
                   {"peak_rss_megabytes", peak_rss_bytes() / 1e6},
                   {"stage_busy_seconds", stage_seconds_}};
  if (!stop_reason_.empty()) out["totals"]["stopped_early"] = stop_reason_;
  // Items in input order, whatever order they finished in (pointers sorted: each record is
  // copied once, into the output).
  std::vector<const nlohmann::json*> sorted;
  sorted.reserve(records_.size());
  for (const nlohmann::json& record : records_) sorted.push_back(&record);
  std::stable_sort(sorted.begin(), sorted.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
    return std::tie((*a)["file"].get_ref<const std::string&>(), (*a)["hdu"].get_ref<const int64_t&>(),
                    (*a)["plane"].get_ref<const int64_t&>()) <
           std::tie((*b)["file"].get_ref<const std::string&>(), (*b)["hdu"].get_ref<const int64_t&>(),
                    (*b)["plane"].get_ref<const int64_t&>());
  });
  nlohmann::json items = nlohmann::json::array();
  items.get_ref<nlohmann::json::array_t&>().reserve(sorted.size());
  for (const nlohmann::json* record : sorted) items.push_back(*record);
  out["items"] = std::move(items);
  return out;
}

// Error texts can quote bytes of a corrupt file and file names need not be UTF-8: replace those.
void RunSummary::write(const std::filesystem::path& path) const {
  write_text_atomic(path, to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace imflow
