// Aggregation over repeats, the scaling analysis per sweep line, bench.csv and the console table.
#include "bench/report.hpp"

#include <spdlog/fmt/fmt.h>

#include <fstream>
#include <map>
#include <set>
#include <utility>

#include "bench/scaling.hpp"
#include "imflow/io/atomic_file.hpp"

namespace imflow::bench {

namespace {
nlohmann::json spread_json(const std::vector<nlohmann::json>& runs, const char* key) {
  std::vector<double> values;
  for (const auto& run : runs) values.push_back(run.at(key).get<double>());
  const Spread s = spread(values);
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}};
}

// Median over repeats of each entry of the object runs[i][key].
nlohmann::json median_map(const std::vector<nlohmann::json>& runs, const char* key) {
  std::map<std::string, std::vector<double>> values;
  for (const auto& run : runs) {
    for (const auto& [stage, v] : run.at(key).items()) values[stage].push_back(v.get<double>());
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [stage, v] : values) out[stage] = spread(v).median;
  return out;
}

double max_or_null(const std::vector<nlohmann::json>& runs, const char* key, bool& any) {
  double best = 0;
  for (const auto& run : runs) {
    if (run.at(key).is_number()) best = std::max(best, run.at(key).get<double>()), any = true;
  }
  return best;
}
}  // namespace

nlohmann::json aggregate_repeats(const std::vector<nlohmann::json>& runs) {
  nlohmann::json point;
  point["repeats"] = runs.size();
  point["items"] = runs.front().at("items");
  point["input_megabytes"] = runs.front().at("input_megabytes");
  for (const char* key : {"wall_seconds", "images_per_second", "megabytes_per_second", "end_to_end_seconds",
                          "end_to_end_images_per_second"}) {
    point[key] = spread_json(runs, key);
  }
  point["stage_busy_seconds"] = median_map(runs, "stage_busy_seconds");
  point["stage_workers"] = runs.front().at("stage_workers");
  point["token_bound"] = runs.front().at("token_bound");
  for (const char* key : {"images_per_second", "fraction", "service_seconds_per_item"}) {
    std::vector<double> values;
    for (const auto& run : runs) values.push_back(run.at("token_bound").at(key).get<double>());
    point["token_bound"][key] = spread(values).median;
  }
  point["utilisation"] = median_map(runs, "utilisation");
  point["host_pool_utilisation"] = spread_json(runs, "host_pool_utilisation")["median"];
  point["cpu_utilisation"] = spread_json(runs, "cpu_utilisation")["median"];
  // Threads busy in stages but given much less CPU: other load on the machine inflated the times.
  point["contended"] = point["cpu_utilisation"].get<double>() < 0.75 * point["host_pool_utilisation"].get<double>();
  bool any = false;
  const double rss = max_or_null(runs, "peak_rss_megabytes", any);
  point["peak_rss_megabytes"] = rss;
  point["peak_rss_scope"] = runs.front().at("peak_rss_scope");
  any = false;
  const double device = max_or_null(runs, "peak_device_megabytes", any);
  point["peak_device_megabytes"] = any ? nlohmann::json(device) : nlohmann::json(nullptr);
  std::vector<double> overlap;
  for (const auto& run : runs) {
    if (run.at("copy_overlap_fraction").is_number()) overlap.push_back(run.at("copy_overlap_fraction").get<double>());
  }
  point["copy_overlap_fraction"] = overlap.empty() ? nlohmann::json(nullptr) : nlohmann::json(spread(overlap).median);
  std::string stage;
  double worst = -1;
  for (const auto& [name, u] : point["utilisation"].items()) {
    if (u.get<double>() > worst) worst = u.get<double>(), stage = name;
  }
  point["bottleneck"] = {{"stage", stage}, {"utilisation", std::max(worst, 0.0)}};
  point["runs"] = runs;
  return point;
}

void analyse_scaling(nlohmann::json& bench) {
  const std::string axis = bench.at("scaling_axis");
  const bool scaled = bench.at("mode") == "scaled-size";
  std::map<std::string, std::vector<size_t>> lines;  // fixed params -> point indices
  for (size_t i = 0; i < bench["points"].size(); ++i) {
    nlohmann::json fixed = bench["points"][i]["params"];
    fixed.erase(axis);
    lines[fixed.dump()].push_back(i);
  }
  nlohmann::json out = {{"axis", axis}, {"mode", bench.at("mode")}, {"lines", nlohmann::json::array()}};
  for (const auto& [fixed, indices] : lines) {
    auto workers_of = [&](size_t i) { return bench["points"][i]["engine"][axis].get<double>(); };
    size_t base = indices.front();
    for (size_t i : indices) if (workers_of(i) < workers_of(base)) base = i;
    const double x0 = bench["points"][base]["images_per_second"]["median"].get<double>();
    const double n0 = workers_of(base);
    std::vector<double> ns, speedups;
    nlohmann::json ids = nlohmann::json::array();
    for (size_t i : indices) {
      nlohmann::json& point = bench["points"][i];
      const double n = workers_of(i) / n0;
      const double s = point["images_per_second"]["median"].get<double>() / std::max(x0, 1e-12);
      ns.push_back(n);
      speedups.push_back(s);
      ids.push_back(point["id"]);
      point["scaling"] = {{"axis", axis}, {"workers", workers_of(i)}, {"relative_workers", n},
                          {"baseline_point", bench["points"][base]["id"]}, {"speedup", s}, {"efficiency", s / n}};
      if (n > 1) point["scaling"][scaled ? "gustafson_serial_fraction" : "karp_flatt"] = scaled ? (n - s) / (n - 1) : karp_flatt(s, n);
    }
    nlohmann::json line = {{"fixed", nlohmann::json::parse(fixed)}, {"baseline_point", bench["points"][base]["id"]},
                           {"points", ids}, {"relative_workers", ns}, {"speedup", speedups}};
    if (scaled) {
      const GustafsonFit g = fit_gustafson(ns, speedups);
      line["gustafson"] = {{"serial_fraction", g.serial_fraction}, {"points", g.points}};
    } else {
      const AmdahlFit a = fit_amdahl(ns, speedups);
      line["amdahl"] = {{"serial_fraction", a.serial_fraction}, {"max_speedup", a.max_speedup},
                        {"rms_residual", a.rms_residual}, {"points", a.points}};
    }
    out["lines"].push_back(line);
  }
  bench["scaling"] = out;
}

void write_csv(const nlohmann::json& bench, const std::filesystem::path& path) {
  std::set<std::string> params, stages;
  for (const auto& p : bench["points"]) {
    for (const auto& [k, v] : p["params"].items()) params.insert(k);
    for (const auto& [k, v] : p["utilisation"].items()) stages.insert(k);
  }
  std::string csv = "point,label";
  for (const auto& k : params) csv.append(",sweep_").append(k);
  csv += ",device,threads,buffers,streams,items,repeats,wall_median,wall_min,wall_max,images_per_s_median,"
         "images_per_s_min,images_per_s_max,mb_per_s_median,mb_per_s_min,mb_per_s_max,end_to_end_median,"
         "end_to_end_images_per_s_median,peak_rss_mb,peak_device_mb,"
         "copy_overlap,host_pool_util,cpu_util,bottleneck,bottleneck_util,speedup,karp_flatt";
  for (const auto& s : stages) csv.append(",busy_").append(s).append(",util_").append(s);
  csv += "\n";
  auto num = [](const nlohmann::json& v) { return v.is_number() ? fmt::format("{:.6g}", v.get<double>()) : std::string(); };
  for (const auto& p : bench["points"]) {
    csv += fmt::format("{},\"{}\"", p["id"].get<int>(), p["label"].get<std::string>());
    for (const auto& k : params) csv.append(",").append(p["params"].contains(k) ? std::to_string(p["params"][k].get<int>()) : "");
    const auto& e = p["engine"];
    csv += fmt::format(",{},{},{},{},{},{}", e["device"].get<std::string>(), e["threads"].get<int>(),
                       e["buffers"].get<int>(), e["streams"].get<int>(), p["items"].get<int64_t>(), p["repeats"].get<int>());
    for (const char* key : {"wall_seconds", "images_per_second", "megabytes_per_second"}) {
      for (const char* stat : {"median", "min", "max"}) csv.append(",").append(num(p[key][stat]));
    }
    csv.append(",").append(num(p["end_to_end_seconds"]["median"]));
    csv.append(",").append(num(p["end_to_end_images_per_second"]["median"]));
    const nlohmann::json scaling = p.value("scaling", nlohmann::json::object());
    for (const nlohmann::json* v : {&p["peak_rss_megabytes"], &p["peak_device_megabytes"], &p["copy_overlap_fraction"],
                                    &p["host_pool_utilisation"], &p["cpu_utilisation"]}) {
      csv.append(",").append(num(*v));
    }
    csv.append(",").append(p["bottleneck"]["stage"].get<std::string>()).append(",").append(num(p["bottleneck"]["utilisation"]));
    csv.append(",").append(num(scaling.value("speedup", nlohmann::json())));
    csv.append(",").append(num(scaling.value("karp_flatt", nlohmann::json())));
    for (const auto& s : stages) {
      csv.append(",").append(num(p["stage_busy_seconds"].value(s, nlohmann::json())));
      csv.append(",").append(num(p["utilisation"].value(s, nlohmann::json())));
    }
    csv += "\n";
  }
  write_text_atomic(path, csv);
}

namespace {
// The input or output ceiling (input_ceiling.hpp, output_ceiling.hpp) and the best point's share
// of it, or why it is missing.
std::string ceiling_line(const char* side, const nlohmann::json& ceiling, const nlohmann::json* best) {
  if (!ceiling.contains("images_per_second")) {
    return fmt::format("{} ceiling not measured: {}\n", side, ceiling.value("skipped", ceiling.value("error", std::string("unknown"))));
  }
  const auto& ips = ceiling["images_per_second"];
  std::string line = fmt::format("{} ceiling ({}, {} threads): {:.1f} images/s ({:.1f} .. {:.1f}), {:.0f} MB/s", side,
                                 ceiling["what"].get<std::string>(), ceiling["threads"].get<int>(), ips["median"].get<double>(),
                                 ips["min"].get<double>(), ips["max"].get<double>(), ceiling["megabytes_per_second"].get<double>());
  if (best != nullptr) {
    line += fmt::format("; the best point ({}) runs at {:.0f}% of it", (*best)["label"].get<std::string>(),
                        100 * (*best)["images_per_second"]["median"].get<double>() / ips["median"].get<double>());
  }
  return line + "\n";
}
}  // namespace

std::string format_report(const nlohmann::json& bench) {
  std::string text = fmt::format("{:<28} {:>7} {:>10} {:>19} {:>9} {:>11} {:>9}  {}\n", "point", "items", "images/s",
                                 "(min .. max)", "wall s", "end to end", "speedup", "bottleneck (utilisation)");
  for (const auto& p : bench["points"]) {
    const auto& ips = p["images_per_second"];
    text += fmt::format("{:<28} {:>7} {:>10.1f} {:>8.1f} .. {:>8.1f} {:>9.3f} {:>9.3f} s {:>9.2f}  {} ({:.0f}%)\n",
                        p["label"].get<std::string>(), p["items"].get<int64_t>(), ips["median"].get<double>(),
                        ips["min"].get<double>(), ips["max"].get<double>(), p["wall_seconds"]["median"].get<double>(),
                        p["end_to_end_seconds"]["median"].get<double>(), p["scaling"]["speedup"].get<double>(), p["bottleneck"]["stage"].get<std::string>(),
                        100 * p["bottleneck"]["utilisation"].get<double>());
  }
  // The engine's own choices (buffers=auto, batch=auto) beside the sweep's best point.
  const nlohmann::json* best = nullptr;
  for (const auto& p : bench["points"]) {
    if (best == nullptr || p["images_per_second"]["median"] > (*best)["images_per_second"]["median"]) best = &p;
  }
  const std::pair<const char*, const char*> choices[] = {{"buffers", "buffers per stream"}, {"batch", "items per GPU batch"}};
  for (const auto& p : bench["points"]) {
    for (const auto& [key, what] : choices) {
      if (!p["engine"].value(std::string(key) + "_automatic", false) || bench["points"].size() < 2) continue;
      const double mine = p["images_per_second"]["median"].get<double>();
      const double top = (*best)["images_per_second"]["median"].get<double>();
      const std::string grown = key == std::string("buffers") && p["engine"].contains("items_at_end")
                                    ? fmt::format(" (the pool grew to {} items during the run)", p["engine"]["items_at_end"].get<int64_t>())
                                    : "";
      text += fmt::format("{}: {} {} chosen{}, {:.1f} images/s = {:.2f} x the best point ({}, {:.1f})\n",
                          p["label"].get<std::string>(), p["engine"][key].get<int>(), what, grown, mine, mine / top,
                          (*best)["label"].get<std::string>(), top);
    }
  }
  if (bench.contains("input_ceiling")) text += ceiling_line("input", bench["input_ceiling"], best);
  if (bench.contains("output_ceiling")) text += ceiling_line("output", bench["output_ceiling"], best);
  for (const auto& line : bench["scaling"]["lines"]) {
    const std::string fixed = line["fixed"].empty() ? "all points" : line["fixed"].dump();
    if (line.contains("amdahl")) {
      const auto& a = line["amdahl"];
      text += fmt::format("Amdahl over {} ({} points beyond the baseline): serial fraction {:.4f}, max speedup {}\n",
                          fixed, a["points"].get<int>(), a["serial_fraction"].get<double>(),
                          a["max_speedup"].get<double>() > 0 ? fmt::format("{:.1f}", a["max_speedup"].get<double>()) : "unbounded");
    } else {
      const auto& g = line["gustafson"];
      text += fmt::format("Gustafson over {} ({} points beyond the baseline): serial fraction {:.4f}\n", fixed,
                          g["points"].get<int>(), g["serial_fraction"].get<double>());
    }
  }
  return text;
}

}  // namespace imflow::bench
