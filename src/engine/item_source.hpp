// ItemSource: turns the sorted file list into work-item references lazily, one file scanned
// at a time, so the list of items never has to be held whole.
#pragma once
#include <deque>
#include <filesystem>
#include <vector>

#include "imflow/work_item.hpp"

namespace imflow {

class ItemSource {
 public:
  ItemSource(std::vector<std::filesystem::path> files, std::filesystem::path input_root);

  // The next item, or false when every file has been listed. A file that cannot be scanned
  // yields one item carrying the error.
  bool next(ItemRef& out);
  size_t files() const { return files_.size(); }
  size_t files_listed() const { return next_file_; }

 private:
  void scan_next_file();
  std::vector<std::filesystem::path> files_;
  std::filesystem::path root_;
  size_t next_file_ = 0;
  int64_t next_index_ = 0;
  std::deque<ItemRef> pending_;
};

}  // namespace imflow
