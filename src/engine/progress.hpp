// Progress reporting: a redrawn status line on a terminal (files done/total, images/s, MB/s,
// ETA), or a plain log line every few seconds otherwise.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>

#include "imflow/engine.hpp"

namespace imflow {

class Progress {
 public:
  // counts: also kept up to date there (RunOptions::counts), or nullptr.
  Progress(int64_t total_files, bool terminal, RunCounts* counts = nullptr);
  // Called once per finished item (thread-safe).
  void item_done(bool file_finished, int64_t bytes, bool failed);
  void finish();

 private:
  void draw(bool final_line);
  std::mutex mutex_;
  const int64_t total_files_;
  const bool terminal_;
  RunCounts* const counts_;
  int64_t files_done_ = 0, items_done_ = 0, failed_ = 0, bytes_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace imflow
