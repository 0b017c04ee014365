// write_mef_ldacs: grouping the summary's items by input file; io/catalog_ldac.cpp copies the HDUs.
#include "ldac_merge.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "imflow/io/ldac.hpp"

namespace imflow {

namespace {
struct HduCatalog {
  int64_t hdu = 0;
  std::string ldac;  // empty: the item has none
};

std::string ldac_output(const nlohmann::json& record) {
  const auto outputs = record.find("outputs");
  if (outputs == record.end() || !outputs->is_array()) return "";
  for (const auto& output : *outputs) {
    const std::string& file = output.get_ref<const std::string&>();
    if (file.ends_with(".ldac")) return file;
  }
  return "";
}

// OUT/.../m.hdu3.ldac -> OUT/.../m.ldac; OUT/.../m.ldac (HDU 0's own) -> OUT/.../m.mef.ldac.
std::string merged_name(const std::vector<HduCatalog>& parts) {
  const std::string& first = parts.front().ldac;
  if (parts.front().hdu == 0) return first.substr(0, first.size() - 5) + ".mef.ldac";
  const std::string suffix = ".hdu" + std::to_string(parts.front().hdu) + ".ldac";
  return first.substr(0, first.size() - suffix.size()) + ".ldac";
}

int64_t write_mef_ldacs_of(const std::vector<const nlohmann::json*>& records) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const nlohmann::json*>> by_file;
  for (const nlohmann::json* record : records) {
    const std::string file = record->value("file", std::string());
    auto& group = by_file[file];
    if (group.empty()) order.push_back(file);
    group.push_back(record);
  }
  int64_t written = 0;
  for (const std::string& file : order) {
    const auto& group = by_file[file];
    if (group.size() < 2) continue;
    std::vector<HduCatalog> parts;
    bool cube = false, complete = true;
    for (const nlohmann::json* record : group) {
      cube = cube || record->value("plane", int64_t{0}) != 0;
      HduCatalog part{record->value("hdu", int64_t{0}), ldac_output(*record)};
      complete = complete && record->value("status", std::string()) == "ok" && !part.ldac.empty();
      parts.push_back(std::move(part));
    }
    if (cube) continue;  // the planes of a cube are not the chips of an exposure
    if (!complete) {
      spdlog::warn("{}: not every HDU has a catalog: no merged FITS_LDAC file (the HDUs' own .ldac files stay)", file);
      continue;
    }
    std::sort(parts.begin(), parts.end(), [](const HduCatalog& a, const HduCatalog& b) { return a.hdu < b.hdu; });
    std::vector<std::filesystem::path> paths;
    for (const HduCatalog& part : parts) paths.emplace_back(part.ldac);
    merge_ldac_files(paths, merged_name(parts));
    ++written;
  }
  return written;
}
}  // namespace

int64_t write_mef_ldacs(const nlohmann::json& summary) {
  std::vector<const nlohmann::json*> records;
  if (const auto items = summary.find("items"); items != summary.end() && items->is_array()) {
    for (const nlohmann::json& item : *items) records.push_back(&item);
  }
  return write_mef_ldacs_of(records);
}

int64_t write_mef_ldacs(const RunSummary& summary) {
  std::vector<const nlohmann::json*> records;
  for (const RunSummary::Record* record : summary.ordered_records()) records.push_back(&record->json);
  return write_mef_ldacs_of(records);
}

}  // namespace imflow
