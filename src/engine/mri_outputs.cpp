// PNG output of reconstructed slices and the per-run metrics.csv (see mri_outputs.hpp).
#include "mri_outputs.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

#include "imflow/io/atomic_file.hpp"
#include "imflow/io/png.hpp"
#include "io/png_memory.hpp"

namespace imflow {

void write_png_output(const WorkItem& item, const std::filesystem::path& path, int compression) {
  const int bit_depth = item.ref.bit_depth;
  if (bit_depth == 8 || bit_depth == 16) {  // the normalization applied as the samples are made
    const PngSampleMap map = item.normalization ? PngSampleMap{item.normalization->scale, item.normalization->offset}
                                                : PngSampleMap{};
    write_png_gray(path, item.pixels.view(), bit_depth, compression, item.normalization ? &map : nullptr);
    return;
  }
  // Float input: normalized, then its finite range stretched to 16 bits. The thread's copy is
  // kept for its next slice unless it grew past 16 MiB.
  thread_local std::vector<float> values;
  const detail::TrimOnExit trim(values);
  values.assign(item.pixels.begin(), item.pixels.end());
  if (item.normalization) {
    const double offset = item.normalization->offset, scale = item.normalization->scale;
    for (float& v : values) v = static_cast<float>(v * scale + offset);
  }
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (float v : values) {
    if (std::isfinite(v)) lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
  }
  // NaN -> 0; +-Infinity (a saturated voxel) -> 65535 and 0, as the integer depths clamp them.
  const double range = hi > lo ? hi - lo : 0.0;
  for (float& v : values) {
    if (std::isinf(v)) v = v > 0.0f ? 65535.0f : 0.0f;
    else v = range > 0.0 && std::isfinite(v) ? static_cast<float>((v - lo) / range * 65535.0) : 0.0f;
  }
  write_png_gray(path, ConstImageView{values.data(), item.pixels.width(), item.pixels.height()}, 16, compression);
}

namespace {
void append_csv_field(std::string& out, const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) {
    out += text;
    return;
  }
  out += '"';
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

// A metric as CSV text: %.10g; JSON null (a non-finite value) as `inf` for PSNR (only a perfect
// reconstruction makes it non-finite), empty otherwise.
void append_metric(std::string& out, const nlohmann::json& metrics, const char* name) {
  const auto found = metrics.find(name);
  if (found == metrics.end()) return;
  if (found->is_null()) {
    if (std::strcmp(name, "psnr_db") == 0) out += "inf";
    return;
  }
  char text[64];  // %.10g, as std::to_chars writes it
  const char* end = std::to_chars(text, text + sizeof text, found->get<double>(), std::chars_format::general, 10).ptr;
  out.append(text, static_cast<size_t>(end - text));
}

bool has_svd_metrics(const nlohmann::json& record) {
  const auto status = record.find("status");
  if (status == record.end() || !status->is_string() || status->get_ref<const std::string&>() != "ok") return false;
  const auto metrics = record.find("metrics");
  return metrics != record.end() && metrics->contains("rank");
}

struct MetricsRow {
  const std::string* file;
  int64_t plane;
  const std::string* text;
};
}  // namespace

std::string metrics_csv_row(const nlohmann::json& record) {
  if (!has_svd_metrics(record)) return "";
  std::string row;
  row.reserve(128);
  append_csv_field(row, record.value("file", std::string()));
  row += ',';
  row += std::to_string(record.value("plane", int64_t{0}));
  const nlohmann::json& metrics = record["metrics"];
  for (const char* name : {"rank", "rel_frobenius_error", "psnr_db", "energy_kept", "compression_ratio", "singular_values"}) {
    row += ',';
    append_metric(row, metrics, name);
  }
  row += ',';  // zeroed_pixels: present only when normalize's nonfinite: zero set some
  if (metrics.contains("zeroed_pixels")) append_metric(row, metrics, "zeroed_pixels");
  else row += '0';
  row += '\n';
  return row;
}

// The summary's records come in (file, HDU, plane) order; the rows go in (file, slice) order
// (stable: slices of one file in several HDUs keep their HDU order). With rows made as records
// were added (RunSummary::derive_lines) this is a copy: building them here from the JSON records
// took 0.07 s for 14k slices on a 2-core VM (cache misses in the records' maps).
void write_metrics_csv(const RunSummary& summary, const std::filesystem::path& path) {
  const std::vector<const RunSummary::Record*> records = summary.ordered_records();
  std::vector<std::string> made_here(summary.derives_lines() ? 0 : records.size());
  std::vector<MetricsRow> rows;
  rows.reserve(records.size());
  size_t bytes = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const RunSummary::Record& record = *records[i];
    const std::string* text = &record.line;
    if (!summary.derives_lines()) {
      made_here[i] = metrics_csv_row(record.json);
      text = &made_here[i];
    }
    if (text->empty()) continue;
    rows.push_back({&record.file, record.plane, text});
    bytes += text->size();
  }
  const auto before = [](const MetricsRow& a, const MetricsRow& b) {
    return std::tie(*a.file, a.plane) < std::tie(*b.file, b.plane);
  };
  if (!std::is_sorted(rows.begin(), rows.end(), before)) std::stable_sort(rows.begin(), rows.end(), before);
  std::string csv = "file,slice,rank,rel_frobenius_error,psnr_db,energy_kept,compression_ratio,singular_values,zeroed_pixels\n";
  csv.reserve(csv.size() + bytes);
  for (const MetricsRow& row : rows) csv += *row.text;
  write_text_atomic(path, csv);
}

}  // namespace imflow
