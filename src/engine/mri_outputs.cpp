// PNG output of reconstructed slices and the per-run metrics.csv (see mri_outputs.hpp).
#include "mri_outputs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <tuple>
#include <vector>

#include "imflow/io/atomic_file.hpp"
#include "imflow/io/png.hpp"

namespace imflow {

void write_png_output(const WorkItem& item, const std::filesystem::path& path, int compression) {
  std::vector<float> values(item.pixels.begin(), item.pixels.end());
  if (item.normalization) {
    const double offset = item.normalization->offset, scale = item.normalization->scale;
    for (float& v : values) v = static_cast<float>(v * scale + offset);
  }
  int bit_depth = item.ref.bit_depth;
  if (bit_depth != 8 && bit_depth != 16) {  // float input: stretch the finite range to 16 bits
    bit_depth = 16;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (float v : values) {
      if (std::isfinite(v)) lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
    }
    const double range = hi > lo ? hi - lo : 0.0;
    for (float& v : values) v = range > 0.0 && std::isfinite(v) ? static_cast<float>((v - lo) / range * 65535.0) : 0.0f;
  }
  write_png_gray(path, ConstImageView{values.data(), item.pixels.width(), item.pixels.height()}, bit_depth, compression);
}

namespace {
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// A metric as CSV text: %.10g; JSON null (a non-finite value) as `inf` for PSNR (only a perfect
// reconstruction makes it non-finite), empty otherwise.
std::string metric(const nlohmann::json& metrics, const char* name) {
  if (!metrics.contains(name)) return "";
  const nlohmann::json& value = metrics[name];
  if (value.is_null()) return std::string(name) == "psnr_db" ? "inf" : "";
  char text[64];
  std::snprintf(text, sizeof text, "%.10g", value.get<double>());
  return text;
}
}  // namespace

void write_metrics_csv(const RunSummary& summary, const std::filesystem::path& path) {
  std::vector<const nlohmann::json*> rows;
  for (const nlohmann::json& record : summary.records()) {
    if (record.value("status", "") == "ok" && record.contains("metrics") && record["metrics"].contains("rank")) {
      rows.push_back(&record);
    }
  }
  std::sort(rows.begin(), rows.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
    return std::tie((*a)["file"].get_ref<const std::string&>(), (*a)["plane"].get_ref<const int64_t&>()) <
           std::tie((*b)["file"].get_ref<const std::string&>(), (*b)["plane"].get_ref<const int64_t&>());
  });
  std::ostringstream csv;
  csv << "file,slice,rank,rel_frobenius_error,psnr_db,energy_kept,compression_ratio,singular_values\n";
  for (const nlohmann::json* record : rows) {
    const nlohmann::json& m = (*record)["metrics"];
    csv << csv_field((*record)["file"].get<std::string>()) << ',' << (*record)["plane"].get<int64_t>() << ','
        << metric(m, "rank") << ',' << metric(m, "rel_frobenius_error") << ',' << metric(m, "psnr_db") << ','
        << metric(m, "energy_kept") << ',' << metric(m, "compression_ratio") << ',' << metric(m, "singular_values")
        << '\n';
  }
  write_text_atomic(path, csv.str());
}

}  // namespace imflow
