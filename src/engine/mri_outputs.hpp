// Outputs of the MRI workload: the reconstructed slice as PNG (source bit depth, original
// intensity range) and the per-run metrics CSV built from the summary records.
#pragma once
#include <filesystem>
#include <string>

#include "imflow/summary.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

// Write item.pixels (de-normalized when `normalize` ran) to `path` as a grayscale PNG:
// 8- or 16-bit as the input was stored (rounded, clamped to [0, 255] / [0, 65535]); for float
// inputs (bit depth 0) 16-bit with the slice's finite range [min, max] stretched to [0, 65535].
void write_png_output(const WorkItem& item, const std::filesystem::path& path, int compression = 1);

// OUT/metrics.csv: one row per successful item that has SVD metrics, in input order
// (file, slice, rank, rel_frobenius_error, psnr_db, energy_kept, compression_ratio,
// singular_values). Written atomically. Throws OutputError.
void write_metrics_csv(const RunSummary& summary, const std::filesystem::path& path);

// A summary record's metrics.csv row (with its newline); empty when the record is not a
// successful item with SVD metrics. run_pipeline hands it to RunSummary::derive_lines, and
// write_metrics_csv takes a summary's derived lines to be these rows.
std::string metrics_csv_row(const nlohmann::json& record);

}  // namespace imflow
