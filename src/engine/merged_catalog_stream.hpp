// OUT/catalog.csv written while the run goes on: the thread that finishes an item makes its part
// of the merged catalog (summary_merge.hpp: its catalog rows read back while hot, prefixed by file,
// HDU and plane), and one writer thread appends the parts in item order, so the file is complete
// when the last item is, not a pass over every catalog later. A thread whose part would put the
// queue over its bound waits while the writer has work (the next part queued or being written), so
// a writer slower than the run slows the run instead of leaving the merge for after it. The file
// counts only when it holds exactly the summary's records in the summary's order; otherwise (a
// tiled image, an item lost to a stop, too much queued behind an item that has not come, paths
// listed in another order than their names sort) it is dropped and the run merges the catalogs
// after its last item, as without it.
#pragma once
#include <nlohmann/json.hpp>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "imflow/io/atomic_file.hpp"
#include "summary_merge.hpp"

namespace imflow {

class MergedCatalogStream {
 public:
  // Parts queued beyond `max_pending_bytes` wait for the writer while it has work, else (the next
  // item has not come) give the stream up.
  MergedCatalogStream(std::filesystem::path path, size_t max_pending_bytes);
  ~MergedCatalogStream();  // stops the writer; an uncommitted file is removed
  MergedCatalogStream(const MergedCatalogStream&) = delete;
  MergedCatalogStream& operator=(const MergedCatalogStream&) = delete;

  using Key = std::tuple<std::string, int64_t, int64_t>;  // file, HDU, plane
  struct Part {
    Key key;
    MergedCatalogPart rows;
  };
  // An item's part of the file from its summary record (RunSummary::item_record), made in the
  // calling thread with the buffers of a part already written; empty once the stream is given up.
  Part part(const nlohmann::json& record);
  // Queues the part of item `index` (ItemSource's numbering: 0, 1, 2, ... in list order).
  // Thread-safe; true when the thread waited for room behind the writer.
  bool queue(int64_t index, Part part);
  // From now on the run's merge after the last item writes the file.
  void give_up();
  // After the last item: true when the file holds exactly `records` (the summary's, in order) and
  // has been committed (or no record has a catalog, and there is no file, as the merge would
  // leave it); false when the caller must merge (nothing is left under the path).
  bool finish(const std::vector<const nlohmann::json*>& records);

 private:
  void write_in_order();  // the writer thread's loop
  void give_up_locked();  // with mutex_ held
  bool append(const Part& part);

  std::filesystem::path path_;
  size_t max_pending_bytes_;
  std::mutex mutex_;
  std::condition_variable changed_;  // a part queued, a stop or a give-up: the writer looks again
  std::condition_variable room_;     // a part written or a give-up: waiting threads look again
  std::map<int64_t, Part> pending_;  // by item index
  std::vector<std::string> spare_rows_;  // written parts' row buffers, for the next parts to reuse
  size_t pending_bytes_ = 0;
  int64_t next_ = 0;
  bool stopping_ = false, given_up_ = false;
  bool writing_ = false;  // the writer is appending a part (it will look at the queue again)
  // The writer thread's own (read by finish() after joining it).
  std::vector<Key> written_;
  std::unique_ptr<AtomicOutput> output_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_{nullptr, std::fclose};
  bool write_failed_ = false;
  std::thread writer_;
};

}  // namespace imflow
