// Merging run summaries of several processes (MPI ranks) into one, and the merged catalog of a
// run: every item's catalog CSV concatenated with file/HDU/plane columns.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "imflow/summary.hpp"

namespace imflow {

// Items concatenated (sorted by file, HDU, plane), totals summed (wall time: the longest; rates
// recomputed from it), per-rank totals kept under "ranks".
nlohmann::json merge_summaries(const std::vector<nlohmann::json>& parts);

// OUT/catalog.csv: the rows of every successful item's `.cat.csv`, in summary order, prefixed
// by file (relative to the output dir's input), hdu and plane. Returns the rows written.
int64_t write_merged_catalog(const nlohmann::json& summary, const std::filesystem::path& path);
// The same from a run's summary, without building its JSON.
int64_t write_merged_catalog(const RunSummary& summary, const std::filesystem::path& path);

// One item's part of the merged catalog: the rows of its `.cat.csv` files, each prefixed by its
// file, HDU and plane, and the first one's header line (empty when the item has no catalog).
struct MergedCatalogPart {
  std::string header;
  std::string rows;                     // the prefixed rows, followed by
  std::vector<std::string> more_rows;   // a large catalog's, in blocks made in parallel
  int64_t count = 0;
  size_t bytes() const;
  std::vector<std::string_view> pieces() const;  // rows then more_rows
};
MergedCatalogPart merged_catalog_part(const nlohmann::json& item);
// The same into `part`, whose strings keep their capacity (a recycled part allocates nothing).
void merged_catalog_part(const nlohmann::json& item, MergedCatalogPart& part);
// The merged catalog's header line for a part's header.
std::string merged_catalog_header(const std::string& part_header);

}  // namespace imflow
