// MergedCatalogStream: parts queued by item index, put into the file in that order by the writer
// thread (pwrite) and by threads over the queue's bound (copies through the file's mapping).
#include "merged_catalog_stream.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace imflow {

namespace {
// Row buffers kept for reuse: about one per thread that finishes items, so that a part's megabyte
// of rows costs no fresh pages.
constexpr size_t kSpareRows = 64;
constexpr size_t kSpareRowBytes = size_t{16} << 20;  // larger ones go back to the allocator
// Threads copying parts at once; more wait. On a 32-core host with 2 GPUs (1.6 MB parts, tmpfs),
// 8 ran as fast as no limit and 4 slower; with pages faulted in by each copier, 8, 16 and 32 alike.
constexpr int kMaxCopying = 8;

std::tuple<std::string, int64_t, int64_t> key_of(const nlohmann::json& record) {
  return {record.value("file", std::string()), record.value("hdu", int64_t{0}), record.value("plane", int64_t{0})};
}
}  // namespace

MergedCatalogStream::MergedCatalogStream(std::filesystem::path path, size_t max_pending_bytes, bool writer_thread)
    : path_(std::move(path)), max_pending_bytes_(max_pending_bytes) {
  if (writer_thread) writer_ = std::thread([this] { write_in_order(); });
}

MergedCatalogStream::~MergedCatalogStream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (writer_.joinable()) writer_.join();
  close_file(false);
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

MergedCatalogStream::Queued MergedCatalogStream::queue(int64_t index, Part part) {
  const size_t bytes = part.rows.bytes();
  Queued how;
  std::unique_lock lock(mutex_);
  // The next part in order is always taken. Another one over the bound first copies the parts
  // due next into the file, which frees room without any other thread; with none to copy it waits
  // while the writer has work. Waiting for an item that has not come could wait on threads that
  // wait here themselves: then the stream is given up.
  const auto over = [&] { return index != next_ && pending_bytes_ + bytes > max_pending_bytes_; };
  for (;;) {
    if (given_up_) return how;
    if (!over()) break;
    if (pending_.count(next_) != 0 && copying_ < kMaxCopying) {
      Taken taken;
      if (!take_next_locked(taken)) return how;
      ++copying_;
      lock.unlock();
      room_.notify_all();
      const int failure = put(taken, /*copy=*/true);
      lock.lock();
      --copying_;
      how.copied = true;
      if (failure != 0) {
        fail_locked(std::strerror(failure));
      } else {
        recycle_locked(taken.part);
      }
      room_.notify_all();
      continue;
    }
    if (writing_ || copying_ > 0 || pending_.count(next_) != 0) {
      how.waited = true;
      room_.wait(lock);
      continue;
    }
    spdlog::debug("catalog.csv: {} bytes wait for item {}: merged after the run instead", pending_bytes_, next_);
    give_up_locked();
    lock.unlock();
    changed_.notify_all();
    return how;
  }
  pending_bytes_ += bytes;
  pending_.emplace(index, std::move(part));
  lock.unlock();
  changed_.notify_all();
  return how;
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

bool MergedCatalogStream::take_next_locked(Taken& taken) {
  const auto it = pending_.find(next_);
  taken.part = std::move(it->second);
  pending_.erase(it);
  pending_bytes_ -= taken.part.rows.bytes();
  ++next_;
  written_.push_back(taken.part.key);
  if (taken.part.rows.header.empty()) return true;  // no catalog: nothing to write
  if (file_ == nullptr) {  // the first catalog: the file and its header line
    try {
      output_ = std::make_unique<AtomicOutput>(path_);
      fd_ = ::open(output_->temp_path().c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
      if (fd_ < 0) throw std::runtime_error(output_->temp_path().string() + ": " + std::strerror(errno));
      const std::string header = merged_catalog_header(taken.part.rows.header);
      if (const int failure = write_all(fd_, header); failure != 0) throw std::runtime_error(std::strerror(failure));
      end_ = header.size();
      file_ = std::make_unique<ConcurrentFileWriter>(fd_);
    } catch (const std::exception& error) {
      fail_locked(error.what());
      return false;
    }
  }
  taken.offset = end_;
  end_ += taken.part.rows.bytes();
  return true;
}

int MergedCatalogStream::put(const Taken& taken, bool copy) const {
  if (taken.part.rows.header.empty()) return 0;  // no catalog
  const std::vector<std::string_view> pieces = taken.part.rows.pieces();
  return copy ? file_->copy_at(taken.offset, pieces) : file_->write_at(taken.offset, pieces);
}

void MergedCatalogStream::fail_locked(const char* why) {
  spdlog::debug("catalog.csv while the run goes on: {}", why);
  give_up_locked();
}

void MergedCatalogStream::recycle_locked(Part& part) {
  if (!given_up_ && spare_rows_.size() < kSpareRows && part.rows.rows.capacity() <= kSpareRowBytes) {
    spare_rows_.push_back(std::move(part.rows.rows));
  }
}

void MergedCatalogStream::write_in_order() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || given_up_ || pending_.count(next_) != 0; });
    if (given_up_ || pending_.count(next_) == 0) return;  // given up, or stopping and the next item never came
    Taken taken;
    if (!take_next_locked(taken)) return;
    writing_ = true;
    lock.unlock();
    room_.notify_all();
    const int failure = put(taken, /*copy=*/false);
    lock.lock();
    writing_ = false;
    if (failure != 0) {
      fail_locked(std::strerror(failure));
      return;
    }
    recycle_locked(taken.part);
    room_.notify_all();
  }
}

void MergedCatalogStream::close_file(bool keep) {
  file_.reset();  // unmapped
  if (fd_ >= 0 && ::close(fd_) != 0) keep = false;
  fd_ = -1;
  if (!keep) output_.reset();  // removes the temporary file
}

bool MergedCatalogStream::finish(const std::vector<const nlohmann::json*>& records) {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (writer_.joinable()) writer_.join();
  else write_in_order();  // what is left in order, stopping there
  std::unique_lock lock(mutex_);
  room_.wait(lock, [&] { return copying_ == 0; });  // every queue() has returned by now: a guard
  bool complete = !given_up_ && written_.size() == records.size();
  for (size_t i = 0; complete && i < records.size(); ++i) complete = written_[i] == key_of(*records[i]);
  lock.unlock();
  const bool had_file = output_ != nullptr;
  close_file(complete);
  if (!complete || (had_file && output_ == nullptr)) return false;
  if (output_ != nullptr) {
    output_->commit();
    output_.reset();
  }
  return true;
}

}  // namespace imflow
