// bench.json's derived parts and files: per-point aggregation over repeats, the scaling analysis
// (speedup, Karp-Flatt, Amdahl or Gustafson fit per sweep line), bench.csv and the console table.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace imflow::bench {

// Median/min/max of throughput and wall time, median busy seconds and utilisation per stage,
// max peak memory, and the bottleneck (stage of highest median utilisation) over `repeats`.
nlohmann::json aggregate_repeats(const std::vector<nlohmann::json>& repeats);

// Fill bench["scaling"] and every point's "scaling": points sharing all swept values but the
// scaling axis form a line; the baseline is the line's point with the fewest workers.
// Fixed size: speedup = throughput / baseline throughput, Karp-Flatt per point and the Amdahl
// fit; scaled size (bench["mode"] == "scaled-size"): scaled speedup and the Gustafson fit.
void analyse_scaling(nlohmann::json& bench);

// bench.csv: one row per point (swept values, throughput spread, memory, overlap, bottleneck,
// speedup, then busy seconds and utilisation of every stage).
void write_csv(const nlohmann::json& bench, const std::filesystem::path& path);

// A human-readable table of the points and the scaling lines.
std::string format_report(const nlohmann::json& bench);

}  // namespace imflow::bench
