// Progress: terminal status line or periodic log lines.
#include "progress.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace imflow {

Progress::Progress(int64_t total_files, bool terminal, RunCounts* counts)
    : total_files_(total_files), terminal_(terminal), counts_(counts), start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (counts_ != nullptr) counts_->files = total_files;
}

void Progress::item_done(bool file_finished, int64_t bytes, bool failed) {
  std::lock_guard lock(mutex_);
  files_done_ += file_finished;
  ++items_done_;
  failed_ += failed;
  bytes_ += bytes;
  if (counts_ != nullptr) {
    counts_->files_done = files_done_;
    counts_->items_done = items_done_;
    counts_->items_failed = failed_;
  }
  const auto now = std::chrono::steady_clock::now();
  const auto interval = terminal_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
  if (now - last_draw_ >= interval) {
    last_draw_ = now;
    draw(false);
  }
}

void Progress::finish() {
  std::lock_guard lock(mutex_);
  if (terminal_) draw(true);
}

void Progress::draw(bool final_line) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = seconds > 0 ? items_done_ / seconds : 0.0;
  const double file_rate = seconds > 0 ? files_done_ / seconds : 0.0;
  const double eta = file_rate > 0 ? (total_files_ - files_done_) / file_rate : 0.0;
  char line[256];
  std::snprintf(line, sizeof line, "files %lld/%lld  images %lld (%lld failed)  %.1f images/s  %.1f MB/s  ETA %.0f s",
                static_cast<long long>(files_done_), static_cast<long long>(total_files_),
                static_cast<long long>(items_done_), static_cast<long long>(failed_), rate,
                seconds > 0 ? bytes_ / 1e6 / seconds : 0.0, eta);
  if (terminal_) {
    std::fprintf(stderr, "\r\033[K%s%s", line, final_line ? "\n" : "");
    std::fflush(stderr);
  } else {
    spdlog::info("{}", line);
  }
}

}  // namespace imflow
