// MergedCatalogStream: parts queued by item index, appended by one thread as they come in order.
#include "merged_catalog_stream.hpp"

#include <spdlog/spdlog.h>

#include <utility>

namespace imflow {

namespace {
// Row buffers kept for reuse: about one per thread that finishes items, so that a part's megabyte
// of rows costs no fresh pages.
constexpr size_t kSpareRows = 64;
constexpr size_t kSpareRowBytes = size_t{16} << 20;  // larger ones go back to the allocator

std::tuple<std::string, int64_t, int64_t> key_of(const nlohmann::json& record) {
  return {record.value("file", std::string()), record.value("hdu", int64_t{0}), record.value("plane", int64_t{0})};
}
}  // namespace

MergedCatalogStream::MergedCatalogStream(std::filesystem::path path, size_t max_pending_bytes)
    : path_(std::move(path)), max_pending_bytes_(max_pending_bytes), writer_([this] { write_in_order(); }) {}

MergedCatalogStream::~MergedCatalogStream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (writer_.joinable()) writer_.join();
}

MergedCatalogStream::Part MergedCatalogStream::part(const nlohmann::json& record) {
  Part part{key_of(record), {}};
  {
    std::lock_guard lock(mutex_);
    if (given_up_) return part;
    if (!spare_rows_.empty()) {
      part.rows.rows = std::move(spare_rows_.back());
      spare_rows_.pop_back();
    }
  }
  merged_catalog_part(record, part.rows);
  return part;
}

bool MergedCatalogStream::queue(int64_t index, Part part) {
  const size_t bytes = part.rows.bytes();
  bool waited = false;
  {
    std::unique_lock lock(mutex_);
    // The writer's next part is always taken. Another one over the bound waits while the writer
    // has work, which frees room without any other thread; waiting for an item that has not come
    // could wait on threads that wait here themselves.
    const auto over = [&] { return index != next_ && pending_bytes_ + bytes > max_pending_bytes_; };
    const auto may_go = [&] { return given_up_ || !over() || !(writing_ || pending_.count(next_) != 0); };
    if (!may_go()) {
      waited = true;
      room_.wait(lock, may_go);
    }
    if (given_up_) return waited;
    if (over()) {
      spdlog::debug("catalog.csv: {} bytes wait for item {}: merged after the run instead", pending_bytes_, next_);
      give_up_locked();
    } else {
      pending_bytes_ += bytes;
      pending_.emplace(index, std::move(part));
    }
  }
  changed_.notify_all();
  return waited;
}

void MergedCatalogStream::give_up() {
  {
    std::lock_guard lock(mutex_);
    give_up_locked();
  }
  changed_.notify_all();
}

void MergedCatalogStream::give_up_locked() {
  given_up_ = true;
  room_.notify_all();  // threads waiting for room return
  pending_.clear();
  pending_bytes_ = 0;
  spare_rows_.clear();
}

void MergedCatalogStream::write_in_order() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || given_up_ || pending_.count(next_) != 0; });
    if (given_up_) return;
    const auto it = pending_.find(next_);
    if (it == pending_.end()) return;  // stopping, and the next item never came
    Part part = std::move(it->second);
    pending_.erase(it);
    pending_bytes_ -= part.rows.bytes();
    ++next_;
    writing_ = true;
    lock.unlock();
    room_.notify_all();
    const bool ok = append(part);
    lock.lock();
    writing_ = false;
    room_.notify_all();
    if (!ok) {
      give_up_locked();
      return;
    }
    if (spare_rows_.size() < kSpareRows && part.rows.rows.capacity() <= kSpareRowBytes) {
      spare_rows_.push_back(std::move(part.rows.rows));
    }
  }
}

bool MergedCatalogStream::append(const Part& part) {
  try {
    written_.push_back(part.key);
    if (part.rows.header.empty()) return true;
    if (file_ == nullptr) {  // the first catalog: the file and its header line
      output_ = std::make_unique<AtomicOutput>(path_);
      file_.reset(std::fopen(output_->temp_path().c_str(), "wb"));
      if (file_ == nullptr) return false;
      const std::string header = merged_catalog_header(part.rows.header);
      if (std::fwrite(header.data(), 1, header.size(), file_.get()) != header.size()) return false;
    }
    return part.rows.write_rows(file_.get());
  } catch (const std::exception& error) {
    spdlog::debug("catalog.csv while the run goes on: {}", error.what());
    return false;
  }
}

bool MergedCatalogStream::finish(const std::vector<const nlohmann::json*>& records) {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (writer_.joinable()) writer_.join();
  bool complete = !given_up_ && written_.size() == records.size();
  for (size_t i = 0; complete && i < records.size(); ++i) complete = written_[i] == key_of(*records[i]);
  if (file_ != nullptr) complete = std::fclose(file_.release()) == 0 && complete;
  if (!complete) {
    output_.reset();  // removes the temporary file
    return false;
  }
  if (output_ != nullptr) output_->commit();
  return true;
}

}  // namespace imflow
