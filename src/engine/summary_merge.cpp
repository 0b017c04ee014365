// merge_summaries and write_merged_catalog.
#include "summary_merge.hpp"

#include <algorithm>
#include <fstream>

#include "imflow/io/atomic_file.hpp"

namespace imflow {

namespace {
bool item_before(const nlohmann::json& a, const nlohmann::json& b) {
  return std::tuple(a["file"].get<std::string>(), a["hdu"].get<int64_t>(), a["plane"].get<int64_t>()) <
         std::tuple(b["file"].get<std::string>(), b["hdu"].get<int64_t>(), b["plane"].get<int64_t>());
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}
}  // namespace

nlohmann::json merge_summaries(const std::vector<nlohmann::json>& parts) {
  if (parts.empty()) return nlohmann::json::object();
  nlohmann::json merged = parts.front();
  merged.erase("items");
  nlohmann::json items = nlohmann::json::array();
  nlohmann::json ranks = nlohmann::json::array();
  int64_t total = 0, succeeded = 0, failed = 0;
  double wall = 0.0, megabytes = 0.0, megapixels = 0.0, peak_rss = 0.0;
  nlohmann::json busy = nlohmann::json::object();
  for (size_t rank = 0; rank < parts.size(); ++rank) {
    const auto& part = parts[rank];
    const nlohmann::json part_items = part.value("items", nlohmann::json::array());
    for (const auto& item : part_items) {
      nlohmann::json copy = item;
      copy["rank"] = rank;
      items.push_back(std::move(copy));
    }
    const auto& totals = part["totals"];
    ranks.push_back({{"rank", rank}, {"totals", totals}});
    total += totals.value("items", int64_t{0});
    succeeded += totals.value("succeeded", int64_t{0});
    failed += totals.value("failed", int64_t{0});
    wall = std::max(wall, totals.value("wall_seconds", 0.0));
    megabytes += totals.value("input_megabytes", 0.0);
    megapixels += totals.value("megapixels", 0.0);
    peak_rss = std::max(peak_rss, totals.value("peak_rss_megabytes", 0.0));
    const nlohmann::json stages = totals.value("stage_busy_seconds", nlohmann::json::object());
    for (const auto& [stage, seconds] : stages.items()) {
      busy[stage] = busy.value(stage, 0.0) + seconds.get<double>();
    }
    if (totals.contains("stopped_early")) merged["totals"]["stopped_early"] = totals["stopped_early"];
  }
  std::sort(items.begin(), items.end(), item_before);
  const double safe_wall = wall > 0 ? wall : 1e-9;
  merged["totals"] = {{"items", total},
                      {"succeeded", succeeded},
                      {"failed", failed},
                      {"wall_seconds", wall},
                      {"images_per_second", succeeded / safe_wall},
                      {"megabytes_per_second", megabytes / safe_wall},
                      {"input_megabytes", megabytes},
                      {"megapixels", megapixels},
                      {"peak_rss_megabytes_max_rank", peak_rss},
                      {"stage_busy_seconds", busy}};
  merged["ranks"] = ranks;
  merged["items"] = items;
  return merged;
}

namespace {
bool is_catalog_csv(const std::string& file) {
  return file.size() >= 8 && file.compare(file.size() - 8, 8, ".cat.csv") == 0;
}

// The catalog rows of `records` (in that order), each prefixed by its item's file, HDU and plane.
int64_t write_catalog_of(const std::vector<const nlohmann::json*>& records, const std::filesystem::path& path) {
  std::string out;
  bool have_header = false;
  int64_t rows = 0;
  for (const nlohmann::json* item : records) {
    const auto status = item->find("status");
    if (status == item->end() || *status != "ok") continue;
    const auto outputs = item->find("outputs");
    if (outputs == item->end() || !outputs->is_array()) continue;
    for (const auto& output : *outputs) {
      const std::string& file = output.get_ref<const std::string&>();
      if (!is_catalog_csv(file)) continue;
      std::ifstream catalog(file);
      std::string line;
      if (!std::getline(catalog, line)) continue;
      if (!have_header) {
        out += "file,hdu,plane," + line + '\n';
        have_header = true;
      }
      const std::string prefix = csv_field((*item)["file"].get<std::string>()) + "," +
                                 std::to_string((*item)["hdu"].get<int64_t>()) + "," +
                                 std::to_string((*item)["plane"].get<int64_t>()) + ",";
      while (std::getline(catalog, line)) {
        if (line.empty()) continue;
        out += prefix;
        out += line;
        out += '\n';
        ++rows;
      }
    }
  }
  if (!have_header) return 0;
  write_text_atomic(path, out);
  return rows;
}
}  // namespace

int64_t write_merged_catalog(const nlohmann::json& summary, const std::filesystem::path& path) {
  std::vector<const nlohmann::json*> records;
  if (const auto items = summary.find("items"); items != summary.end() && items->is_array()) {
    for (const nlohmann::json& item : *items) records.push_back(&item);
  }
  return write_catalog_of(records, path);
}

int64_t write_merged_catalog(const RunSummary& summary, const std::filesystem::path& path) {
  std::vector<const nlohmann::json*> records;
  for (const RunSummary::Record* record : summary.ordered_records()) records.push_back(&record->json);
  return write_catalog_of(records, path);
}

}  // namespace imflow
