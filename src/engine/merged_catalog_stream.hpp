// OUT/catalog.csv written while the run goes on: the thread that finishes an item makes its part
// of the merged catalog (summary_merge.hpp: its catalog rows read back while hot, prefixed by file,
// HDU and plane), and the parts go into the file in item order, so the file is complete when the
// last item is, not a pass over every catalog later. One writer thread appends them as they come;
// a thread whose part would put the queue over its bound copies the next parts in order into the
// file itself, beside the writer (ConcurrentFileWriter), and waits only when there is none to copy
// while the writer has work, so a file slower to fill than the run slows the run instead of leaving
// the merge for after it. The file counts only when it holds exactly the summary's records in the
// summary's order; otherwise (a tiled image, an item lost to a stop, too much queued behind an item
// that has not come, paths listed in another order than their names sort) it is dropped and the
// run merges the catalogs after its last item, as without it.
#pragma once
#include <nlohmann/json.hpp>

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "imflow/io/atomic_file.hpp"
#include "imflow/io/concurrent_file_writer.hpp"
#include "summary_merge.hpp"

namespace imflow {

class MergedCatalogStream {
 public:
  // Parts queued beyond `max_pending_bytes` make their threads copy earlier parts into the file,
  // or wait for the writer while it has work, else (the next item has not come) give the stream up.
  // Without the writer thread (tests), parts go into the file from threads over the bound and in
  // finish() only.
  MergedCatalogStream(std::filesystem::path path, size_t max_pending_bytes, bool writer_thread = true);
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
  // How queue() went: the part was queued at once, or after the thread waited for the writer or
  // copied earlier parts into the file (or both).
  struct Queued {
    bool waited = false, copied = false;
  };
  // Queues the part of item `index` (ItemSource's numbering: 0, 1, 2, ... in list order).
  // Thread-safe.
  Queued queue(int64_t index, Part part);
  // From now on the run's merge after the last item writes the file.
  void give_up();
  // After the last item: true when the file holds exactly `records` (the summary's, in order) and
  // has been committed (or no record has a catalog, and there is no file, as the merge would
  // leave it); false when the caller must merge (nothing is left under the path).
  bool finish(const std::vector<const nlohmann::json*>& records);

 private:
  // The next part in item order, given its place in the file (with mutex_ held; the file is
  // made with the first catalog). Its bytes then go to `offset` outside the lock.
  struct Taken {
    Part part;
    uint64_t offset = 0;
  };
  bool take_next_locked(Taken& taken);  // false: the file could not be made (the stream is given up)
  // Writes a taken part at its offset, outside the lock: pwrite, or a copy through the file's
  // mapping (copy). 0 or the errno of the failure.
  int put(const Taken& taken, bool copy) const;
  void fail_locked(const char* why);    // a write failed: logged, the stream given up
  void recycle_locked(Part& part);      // keeps a written part's row buffer for a later part
  void write_in_order();                // the writer thread's loop (finish()'s without one)
  void give_up_locked();                // with mutex_ held
  void close_file(bool keep);           // after the writer and every copy have finished

  std::filesystem::path path_;
  size_t max_pending_bytes_;
  std::mutex mutex_;
  std::condition_variable changed_;  // a part queued, a stop or a give-up: the writer looks again
  std::condition_variable room_;     // a part taken or written, a give-up: waiting threads look again
  std::map<int64_t, Part> pending_;  // by item index
  std::vector<std::string> spare_rows_;  // written parts' row buffers, for the next parts to reuse
  size_t pending_bytes_ = 0;
  int64_t next_ = 0;
  bool stopping_ = false, given_up_ = false;
  bool writing_ = false;  // the writer is writing a part (it will look at the queue again)
  int copying_ = 0;       // threads copying parts into the file
  std::vector<Key> written_;  // the parts taken, in file order
  uint64_t end_ = 0;          // the file's bytes given out so far
  std::unique_ptr<AtomicOutput> output_;
  int fd_ = -1;
  std::unique_ptr<ConcurrentFileWriter> file_;
  std::thread writer_;
};

}  // namespace imflow
