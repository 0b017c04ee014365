// The run summary: one record per item (file, HDU, plane, status, stage times, results) and
// totals (images/s, MB/s, wall time, failures), written as JSON. Each record is serialized once,
// when it is added (in the writer threads), so writing the summary of a large run is a copy.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "imflow/work_item.hpp"

namespace imflow {

class RunSummary {
 public:
  // One result as stored: its sort key, its JSON record, and texts built from it when it was added.
  struct Record {
    std::string file;
    int64_t hdu = 0;
    int64_t plane = 0;
    nlohmann::json json;
    std::string text;  // `json` pretty-printed as an element of summary.json's "items" array
    std::string line;  // what the derive_lines function made of `json` (empty without one)
  };
  using LineMaker = std::function<std::string(const nlohmann::json& record)>;

  // Record a finished item (thread-safe); `outputs` are the files written for it.
  void add(const WorkItem& item, const std::vector<std::filesystem::path>& outputs);
  // Record a result whose record the caller built (a tiled image: one record for all its tiles,
  // docs/tiling.md); `pixels` and `times` count in the totals like an item's (thread-safe).
  void add_record(nlohmann::json record, bool ok, int64_t input_bytes, int64_t pixels, const std::vector<StageTime>& times);
  // Record an item a resumed run skipped: its previous record, marked "skipped": true (thread-safe).
  void add_skipped(nlohmann::json previous_record);
  // The JSON record add() stores for an item (also what the manifest keeps).
  static nlohmann::json item_record(const WorkItem& item, const std::vector<std::filesystem::path>& outputs);
  // Its "seconds": the item's time per stage so far.
  static nlohmann::json item_seconds(const WorkItem& item);
  // Every record added from now on also keeps make_line(record) (e.g. its metrics.csv row), built
  // in the adding thread so that writing the file later is a copy. Call before the first add.
  void derive_lines(LineMaker make_line) { make_line_ = std::move(make_line); }
  bool derives_lines() const { return static_cast<bool>(make_line_); }

  void set_context(nlohmann::json context) { context_ = std::move(context); }
  // Add one run-level entry (e.g. the GPU overlap figures) next to the context.
  void set(const std::string& key, nlohmann::json value);
  void finish(double wall_seconds);
  // Why the run stopped before the end of its input (empty when it did not).
  void set_stop_reason(const std::string& reason);
  std::string stop_reason() const;

  int64_t succeeded() const { return succeeded_; }
  int64_t failed() const { return failed_; }
  int64_t items() const { return succeeded_ + failed_; }
  int64_t skipped() const { return skipped_; }  // counted in succeeded() too
  double wall_seconds() const { return wall_seconds_; }
  int64_t input_bytes() const { return input_bytes_; }
  nlohmann::json to_json() const;
  // Writes what to_json().dump(2) would (plus a newline), from the records' stored texts.
  // Thread-safe with the other readers (ordered_records, to_json), not with adds.
  void write(const std::filesystem::path& path) const;
  // The records in input order (file, HDU, plane; ties in the order added), as in to_json()'s
  // "items". The pointers stay valid until the next add.
  std::vector<const Record*> ordered_records() const;

 private:
  Record make_record(nlohmann::json json) const;
  nlohmann::json context_and_totals() const;  // under mutex_
  void sort_records() const;  // under mutex_

  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
  nlohmann::json context_;
  LineMaker make_line_;
  mutable std::vector<Record> records_;
  mutable bool records_sorted_ = true;
  std::map<std::string, double> stage_seconds_;
  int64_t succeeded_ = 0;
  int64_t failed_ = 0;
  int64_t skipped_ = 0;
  int64_t input_bytes_ = 0;
  int64_t pixels_ = 0;
  double wall_seconds_ = 0.0;
  std::string stop_reason_;
};

// Peak resident set size of this process so far, in bytes.
int64_t peak_rss_bytes();

}  // namespace imflow
