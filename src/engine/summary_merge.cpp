// merge_summaries and write_merged_catalog.
#include "summary_merge.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <memory>
#include <string_view>

#include "imflow/errors.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/concurrent_file_writer.hpp"
#include "imflow/io/written_text.hpp"
#include "io/ordered_blocks.hpp"
#include "io/read_only_file.hpp"
#include "prefixed_rows.hpp"

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

// Room for a file's text, never zeroed.
struct TextBuffer {
  std::unique_ptr<char[]> data;
  size_t capacity = 0;
};
constexpr size_t kKeptTextBytes = size_t{16} << 20;
constexpr size_t kReadBlockBytes = size_t{4} << 20;

// The whole file. Up to kKeptTextBytes it goes into this thread's buffer, kept between items, so
// a catalog of a megabyte costs no fresh pages (their faults and clearing took longer than the
// read); a larger one into `large`, freed with it, read in blocks by several threads. A file that
// cannot be read whole gives an empty text (no rows).
std::string_view file_text(const std::string& file, TextBuffer& large) {
  thread_local TextBuffer kept;
  try {
    const detail::ReadOnlyFile in(file);
    const auto size = static_cast<size_t>(in.size());
    TextBuffer& buffer = size <= kKeptTextBytes ? kept : large;
    if (size > buffer.capacity) {
      buffer.data.reset(new char[size]);
      buffer.capacity = size;
    }
    auto read_block = [&](size_t b) {
      const size_t begin = b * kReadBlockBytes, end = std::min(size, begin + kReadBlockBytes);
      detail::pread_exactly(in, reinterpret_cast<unsigned char*>(buffer.data.get() + begin),
                            static_cast<int64_t>(end - begin), static_cast<int64_t>(begin), file, "catalog");
    };
    const size_t blocks = (size + kReadBlockBytes - 1) / kReadBlockBytes;
    if (blocks <= 4) {
      for (size_t b = 0; b < blocks; ++b) read_block(b);
    } else {
      tbb::this_task_arena::isolate([&] { tbb::parallel_for(size_t{0}, blocks, read_block); });
    }
    return {buffer.data.get(), size};
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace

MergedCatalogPart merged_catalog_part(const nlohmann::json& item) {
  MergedCatalogPart part;
  merged_catalog_part(item, part);
  return part;
}

size_t MergedCatalogPart::bytes() const {
  size_t total = rows.size();
  for (const std::string& block : more_rows) total += block.size();
  return total;
}

std::vector<std::string_view> MergedCatalogPart::pieces() const {
  std::vector<std::string_view> out{rows};
  out.insert(out.end(), more_rows.begin(), more_rows.end());
  return out;
}

void merged_catalog_part(const nlohmann::json& item, MergedCatalogPart& part) {
  part.header.clear();
  part.rows.clear();
  part.more_rows.clear();
  part.count = 0;
  const auto status = item.find("status");
  if (status == item.end() || *status != "ok") return;
  const auto outputs = item.find("outputs");
  if (outputs == item.end() || !outputs->is_array()) return;
  for (const auto& output : *outputs) {
    const std::string& file = output.get_ref<const std::string&>();
    if (!is_catalog_csv(file)) continue;
    TextBuffer large;
    const std::string_view* written = written_text(file);  // this thread just wrote it
    const std::string_view text = written != nullptr ? *written : file_text(file, large);
    if (text.empty()) continue;
    const size_t line_end = text.find('\n');
    if (part.header.empty()) part.header = text.substr(0, line_end);
    if (line_end == std::string::npos) continue;
    const std::string prefix = csv_field(item["file"].get<std::string>()) + "," +
                               std::to_string(item["hdu"].get<int64_t>()) + "," +
                               std::to_string(item["plane"].get<int64_t>()) + ",";
    part.count += append_prefixed_rows(text.substr(line_end + 1), prefix, part.rows, part.more_rows);
  }
}

std::string merged_catalog_header(const std::string& part_header) { return "file,hdu,plane," + part_header + '\n'; }

namespace {
// The catalog rows of `records` (in that order), each prefixed by its item's file, HDU and plane:
// items' catalogs read and prefixed in parallel, given their offsets in the file in order, and
// copied there in parallel, a large catalog's blocks side by side (for_blocks_placed_in_order:
// at most 4 items per thread in flight, so memory stays bounded however large the run).
int64_t write_catalog_of(const std::vector<const nlohmann::json*>& records, const std::filesystem::path& path) {
  struct Placed {
    MergedCatalogPart part;
    uint64_t offset = 0;
  };
  std::unique_ptr<AtomicFileWriter> output;
  std::unique_ptr<ConcurrentFileWriter> file;  // unmapped before the output is committed or dropped
  uint64_t end = 0;
  int64_t rows = 0;
  const auto copy = [&](uint64_t offset, std::string_view piece) {
    const std::string_view pieces[] = {piece};
    if (const int failure = file->copy_at(offset, pieces); failure != 0) {
      throw write_failed(path, failure);
    }
  };
  detail::for_blocks_placed_in_order<Placed>(
      records.size(), [&](size_t index) { return Placed{merged_catalog_part(*records[index])}; },
      [&](Placed& placed) {
        if (placed.part.header.empty()) return;
        if (output == nullptr) {  // the first catalog: the file and its header line
          output = std::make_unique<AtomicFileWriter>(path);
          const std::string header = merged_catalog_header(placed.part.header);
          output->write(header);
          end = header.size();
          file = std::make_unique<ConcurrentFileWriter>(output->descriptor());
        }
        placed.offset = end;
        end += placed.part.bytes();
        rows += placed.part.count;
      },
      [&](const Placed& placed) {
        if (placed.part.header.empty()) return;
        const std::vector<std::string_view> pieces = placed.part.pieces();
        std::vector<uint64_t> offsets(pieces.size(), placed.offset);
        for (size_t i = 1; i < pieces.size(); ++i) offsets[i] = offsets[i - 1] + pieces[i - 1].size();
        tbb::parallel_for(size_t{0}, pieces.size(), [&](size_t i) { copy(offsets[i], pieces[i]); });
      },
      4);
  if (output == nullptr) return 0;
  file.reset();
  output->commit();
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
