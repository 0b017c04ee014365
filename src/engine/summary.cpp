// RunSummary: per-item records and totals, serialised with nlohmann::json (each record once, when
// it is added; summary.json is then streamed from those texts).
#include "imflow/summary.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <tuple>

#include "imflow/errors.hpp"
#include "imflow/io/atomic_file.hpp"

namespace imflow {

namespace {
// JSON has no NaN: write null instead.
nlohmann::json number(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr); }

// The indentation of an element of the top-level "items" array in summary.json.
constexpr const char* kItemIndent = "    ";
}  // namespace

int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

nlohmann::json RunSummary::item_seconds(const WorkItem& item) {
  nlohmann::json seconds = nlohmann::json::object();
  for (const auto& time : item.times) seconds[time.stage] = seconds.value(time.stage, 0.0) + time.seconds;
  return seconds;
}

nlohmann::json RunSummary::item_record(const WorkItem& item, const std::vector<std::filesystem::path>& outputs) {
  nlohmann::json record;
  record["file"] = item.ref.path.string();
  record["hdu"] = item.ref.hdu;
  record["plane"] = item.ref.plane;
  record["width"] = item.plane_width();
  record["height"] = item.plane_height();
  record["status"] = item.status == ItemStatus::ok ? "ok" : "failed";
  if (item.status != ItemStatus::ok) record["error"] = item.error;
  record["seconds"] = item_seconds(item);
  if (item.background) {
    record["background"] = {{"median", number(item.background->median)},
                            {"std", number(item.background->std)},
                            {"iterations", item.background->iterations},
                            {"kept", item.background->kept},
                            {"valid", item.background->valid}};
  }
  if (item.threshold) record["threshold"] = number(*item.threshold);
  if (item.status == ItemStatus::ok) {  // a failed item wrote no catalog
    if (item.catalog) record["nsources"] = item.catalog->size();
    else if (item.nlabels) record["nsources"] = *item.nlabels;
  }
  for (const auto& [name, value] : item.metrics) record["metrics"][name] = number(value);
  if (!item.warnings.empty()) record["warnings"] = item.warnings;
  if (item.ref.resident_rows > 0) {  // read in strips straight into GPU memory (docs/tiling.md)
    const int64_t rows = item.ref.resident_rows;
    record["gpu_resident"] = {{"strip_rows", rows}, {"strips", (item.plane_height() + rows - 1) / rows}};
  }
  nlohmann::json files = nlohmann::json::array();
  for (const auto& path : outputs) files.push_back(path.string());
  record["outputs"] = files;
  return record;
}

// The record as summary.json holds it in "items" (dump(2) at depth 2: every line indented by 4).
// Error texts can quote bytes of a corrupt file and file names need not be UTF-8: replace those.
RunSummary::Record RunSummary::make_record(nlohmann::json json) const {
  Record record;
  record.file = json.value("file", std::string());
  record.hdu = json.value("hdu", int64_t{0});
  record.plane = json.value("plane", int64_t{0});
  const std::string text = json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  record.text.reserve(text.size() + text.size() / 8 + 4);
  record.text += kItemIndent;
  for (char c : text) {  // a newline only ever separates lines: JSON strings escape theirs
    record.text += c;
    if (c == '\n') record.text += kItemIndent;
  }
  if (make_line_) record.line = make_line_(json);
  record.json = std::move(json);
  return record;
}

void RunSummary::add_skipped(nlohmann::json previous_record) {
  previous_record["skipped"] = true;
  Record record = make_record(std::move(previous_record));
  std::lock_guard lock(*mutex_);
  records_.push_back(std::move(record));
  records_sorted_ = false;
  ++succeeded_;
  ++skipped_;
}

void RunSummary::add(const WorkItem& item, const std::vector<std::filesystem::path>& outputs) {
  Record record = make_record(item_record(item, outputs));
  std::lock_guard lock(*mutex_);
  records_.push_back(std::move(record));
  records_sorted_ = false;
  if (item.status == ItemStatus::ok) {
    ++succeeded_;
    input_bytes_ += item.input_bytes;
    pixels_ += item.plane_width() * item.plane_height();
  } else {
    ++failed_;
  }
  for (const auto& time : item.times) stage_seconds_[time.stage] += time.seconds;
}

void RunSummary::add_record(nlohmann::json json, bool ok, int64_t input_bytes, int64_t pixels,
                            const std::vector<StageTime>& times) {
  Record record = make_record(std::move(json));
  std::lock_guard lock(*mutex_);
  records_.push_back(std::move(record));
  records_sorted_ = false;
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

nlohmann::json RunSummary::context_and_totals() const {
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
  return out;
}

// Items in input order, whatever order they finished in. Stable, and sorting an already sorted
// prefix again keeps its ties in the order added, so the order is that of the records as added.
void RunSummary::sort_records() const {
  if (records_sorted_) return;
  const auto before = [](const Record* a, const Record* b) {
    return std::tie(a->file, a->hdu, a->plane) < std::tie(b->file, b->hdu, b->plane);
  };
  std::vector<Record*> order(records_.size());
  for (size_t i = 0; i < records_.size(); ++i) order[i] = &records_[i];
  if (!std::is_sorted(order.begin(), order.end(), before)) {
    std::stable_sort(order.begin(), order.end(), before);  // pointers: cheaper to move than records
    std::vector<Record> sorted;
    sorted.reserve(records_.size());
    for (Record* record : order) sorted.push_back(std::move(*record));
    records_ = std::move(sorted);
  }
  records_sorted_ = true;
}

std::vector<const RunSummary::Record*> RunSummary::ordered_records() const {
  std::lock_guard lock(*mutex_);
  sort_records();
  std::vector<const Record*> ordered;
  ordered.reserve(records_.size());
  for (const Record& record : records_) ordered.push_back(&record);
  return ordered;
}

nlohmann::json RunSummary::to_json() const {
  std::lock_guard lock(*mutex_);
  nlohmann::json out = context_and_totals();
  sort_records();
  nlohmann::json items = nlohmann::json::array();
  items.get_ref<nlohmann::json::array_t&>().reserve(records_.size());
  for (const Record& record : records_) items.push_back(record.json);
  out["items"] = std::move(items);
  return out;
}

// The run-level part is small: dump it with a placeholder for "items" (a top-level key: the only
// place where a line starts with exactly two spaces and a quote), then stream the stored records
// in its place.
void RunSummary::write(const std::filesystem::path& path) const {
  std::string head_text;
  {
    std::lock_guard lock(*mutex_);
    nlohmann::json head = context_and_totals();
    head["items"] = nullptr;
    head_text = head.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  const std::string placeholder = "\n  \"items\": null";
  const size_t at = head_text.find(placeholder);
  if (at == std::string::npos) throw OutputError(path.string() + ": internal error: no items placeholder in the summary");
  const std::vector<const Record*> records = ordered_records();  // not under the lock: see the header
  AtomicOutput output(path);
  {
    std::vector<char> buffer(1 << 20);  // before the stream: it must outlive it
    std::ofstream stream;
    stream.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    stream.open(output.temp_path(), std::ios::binary);
    stream.write(head_text.data(), static_cast<std::streamsize>(at));
    if (records.empty()) {
      stream << "\n  \"items\": []";
    } else {
      stream << "\n  \"items\": [\n";
      for (size_t i = 0; i < records.size(); ++i) {
        if (i > 0) stream << ",\n";
        stream.write(records[i]->text.data(), static_cast<std::streamsize>(records[i]->text.size()));
      }
      stream << "\n  ]";
    }
    const size_t rest = at + placeholder.size();
    stream.write(head_text.data() + rest, static_cast<std::streamsize>(head_text.size() - rest));
    stream << '\n';
    stream.flush();
    if (!stream) throw write_failed(path, errno);
  }
  output.commit();
}

}  // namespace imflow
