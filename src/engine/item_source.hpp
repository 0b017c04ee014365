// ItemSource: turns the sorted file list into work-item references lazily, scanning the next
// files (headers only) in parallel batches a few per thread at a time, so the list of items
// never has to be held whole and the serial source of the graph does not cap throughput.
#pragma once
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "imflow/io/companion.hpp"
#include "imflow/io/input_format.hpp"
#include "imflow/work_item.hpp"

namespace imflow {

class ItemSource {
 public:
  ItemSource(std::vector<std::filesystem::path> files, std::filesystem::path input_root);

  // The next item, or false when every file has been listed. A file that cannot be scanned
  // yields one item carrying the error.
  bool next(ItemRef& out);
  // Files larger than this (inflated, for gzip) become one failed item, before any reader runs.
  void set_max_file_bytes(int64_t bytes) { max_file_bytes_ = bytes; }
  // FITS: only image HDUs whose EXTNAME is one of `names` (compared without case or trailing
  // blanks); a file with none of them becomes one failed item listing its HDUs. Empty: all.
  void set_extnames(std::vector<std::string> names);
  // FITS: image HDUs named as companions (a weight map's EXTNAME, io/companion.hpp) are not
  // images of their own.
  void set_companion_extnames(const std::vector<CompanionSpec>& companions);
  // Items for which `skip` returns true are not returned by next() (resume: done before).
  void set_skip(std::function<bool(const ItemRef&)> skip) { skip_ = std::move(skip); }
  // Take file indices from `feed` (MPI dispatch) instead of going through the list in order.
  void set_file_feed(std::function<std::optional<int64_t>()> feed) { feed_ = std::move(feed); }
  // Large planes (docs/tiling.md): `tiler` may turn a plane into tile items (an empty list keeps it
  // whole); `prepare` runs on an image's first tile just before it is returned (the background
  // pre-pass) and may set its error, which drops the image's other tiles. Resume's skip test
  // sees the whole image once.
  void set_tiling(std::function<std::vector<ItemRef>(const ItemRef&, const PlaneInfo&)> tiler,
                  std::function<void(ItemRef&)> prepare) {
    tiler_ = std::move(tiler);
    prepare_ = std::move(prepare);
  }
  size_t files() const { return files_.size(); }
  const std::vector<std::filesystem::path>& file_list() const { return files_; }
  size_t files_listed() const { return next_file_; }

 private:
  // The items of one file (one failed item when it cannot be scanned), the last one marked.
  // Thread-safe: the tiler must be (TileRun::tiles_of is).
  std::vector<ItemRef> scan_file(size_t file_index) const;
  // Scan the next files of the list in parallel into pending_, in list order.
  void scan_ahead();
  std::vector<std::filesystem::path> files_;
  std::filesystem::path root_;
  // Per file: the earlier file whose outputs would have the same names (empty: none).
  std::vector<std::filesystem::path> clashes_with_;
  // Per file named like an HDU or plane of another listed file ("m.hdu1.fits", "m.p3.fits" beside
  // "m.fits"): that file, whose planes scan_file checks (a clash only if it has that HDU/plane).
  std::vector<std::optional<size_t>> named_like_;
  // The error for file `index` when one of file `other`'s selected planes has its output name.
  std::optional<std::string> plane_name_clash(size_t index, size_t other) const;
  // Whether input.extnames selects this plane of a file in `format`.
  bool selected(const InputFormat& format, const PlaneInfo& plane) const;
  size_t next_file_ = 0;
  int64_t next_index_ = 0;
  std::deque<ItemRef> pending_;
  int64_t max_file_bytes_ = INT64_MAX;
  std::vector<std::string> extnames_;  // normalized (upper case, no trailing blanks)
  std::vector<std::string> companion_extnames_;  // likewise: never images
  std::function<bool(const ItemRef&)> skip_;
  std::function<std::optional<int64_t>()> feed_;
  std::function<std::vector<ItemRef>(const ItemRef&, const PlaneInfo&)> tiler_;
  std::function<void(ItemRef&)> prepare_;
  void drop_tiles_of(const ItemRef& tile);
};

}  // namespace imflow
