// The output ceiling: the last run's files written again with no steps (output_ceiling.hpp).
#include "output_ceiling.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/scaling.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/concurrent_file_writer.hpp"

namespace imflow::bench {

namespace fs = std::filesystem;

namespace {
// Files above this are copied in blocks of this size on all threads, as the engine fills a large
// catalog or the merged catalog.csv; smaller ones are written whole by one thread.
constexpr uint64_t kBlockBytes = uint64_t{8} << 20;

struct OutputFile {
  fs::path relative;
  uint64_t bytes = 0;
};

// One task of a pass: a whole small file, or block `block` of a large file.
struct Task {
  size_t file = 0;
  uint64_t block = 0;
  bool whole = true;
};

std::vector<OutputFile> files_under(const fs::path& root) {
  std::vector<OutputFile> files;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) files.push_back({fs::relative(entry.path(), root), entry.file_size()});
  }
  // The largest first, so that no thread starts a large file last.
  std::sort(files.begin(), files.end(), [](const OutputFile& a, const OutputFile& b) { return a.bytes > b.bytes; });
  return files;
}

// One pass: every file written under `target` (which holds their directories); returns seconds.
double write_pass(const std::vector<OutputFile>& files, const fs::path& target, const std::string& content,
                  tbb::task_arena& arena) {
  std::vector<Task> tasks;
  std::vector<std::unique_ptr<AtomicFileWriter>> large(files.size());
  std::vector<std::unique_ptr<ConcurrentFileWriter>> copiers(files.size());
  const auto start = std::chrono::steady_clock::now();
  for (size_t f = 0; f < files.size(); ++f) {
    if (files[f].bytes <= kBlockBytes) {
      tasks.push_back({f, 0, true});
      continue;
    }
    large[f] = std::make_unique<AtomicFileWriter>(target / files[f].relative);
    copiers[f] = std::make_unique<ConcurrentFileWriter>(large[f]->descriptor());
    for (uint64_t b = 0; b * kBlockBytes < files[f].bytes; ++b) tasks.push_back({f, b, false});
  }
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<size_t>(0, tasks.size(), 1),
        [&](const tbb::blocked_range<size_t>& range) {
          for (size_t t = range.begin(); t != range.end(); ++t) {
            const Task& task = tasks[t];
            const OutputFile& file = files[task.file];
            if (task.whole) {
              AtomicFileWriter output(target / file.relative);
              output.write(std::string_view(content).substr(0, file.bytes));
              output.commit();
              continue;
            }
            const uint64_t offset = task.block * kBlockBytes;
            const std::string_view pieces[] = {std::string_view(content).substr(0, std::min(kBlockBytes, file.bytes - offset))};
            if (const int failure = copiers[task.file]->copy_at(offset, pieces); failure != 0) {
              throw write_failed(target / file.relative, failure);
            }
          }
        },
        tbb::simple_partitioner());
  });
  for (size_t f = 0; f < files.size(); ++f) {
    if (!large[f]) continue;
    copiers[f].reset();  // unmapped before the file is published, as the engine does
    large[f]->commit();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

nlohmann::json measure_output_ceiling(const fs::path& written, const fs::path& scratch, int64_t items, int threads,
                                      int repeats) {
  const std::vector<OutputFile> files = fs::is_directory(written) ? files_under(written) : std::vector<OutputFile>{};
  if (files.empty()) return {{"skipped", "the run wrote no files"}};
  uint64_t total_bytes = 0;
  for (const OutputFile& file : files) total_bytes += file.bytes;
  // The bytes written: the same sizes, one pattern (the filesystems' cost does not depend on them).
  const std::string content(std::min(files.front().bytes, kBlockBytes), '0');
  tbb::task_arena arena(std::max(threads, 1));
  std::vector<double> seconds;
  for (int pass = 0; pass <= std::max(repeats, 1); ++pass) {  // pass 0: untimed
    fs::remove_all(scratch);
    for (const OutputFile& file : files) fs::create_directories((scratch / file.relative).parent_path());
    const double elapsed = write_pass(files, scratch, content, arena);
    if (pass > 0) seconds.push_back(elapsed);
  }
  const Spread time = spread(seconds);
  const auto count = static_cast<double>(items);
  const double megabytes = static_cast<double>(total_bytes) * 1e-6;
  return {{"what", "the last run's output files written again as new files, no formatting"},
          {"threads", threads},
          {"files", files.size()},
          {"items", items},
          {"megabytes", megabytes},
          {"seconds", {{"median", time.median}, {"min", time.min}, {"max", time.max}}},
          {"images_per_second", {{"median", count / time.median}, {"min", count / time.max}, {"max", count / time.min}}},
          {"megabytes_per_second", megabytes / time.median}};
}

}  // namespace imflow::bench
