// FileDispatch: rank 0 serves batches of file indices from a shared cursor over MPI; rank 0's
// own graph takes batches from the same cursor directly.
#include "file_dispatch.hpp"

#include <stdexcept>

namespace imflow::mpi {

namespace {
constexpr int kRequestTag = 7101;
constexpr int kReplyTag = 7102;
}  // namespace

FileDispatch::FileDispatch(MPI_Comm comm, int64_t files, int batch) : comm_(comm), files_(files), batch_(batch) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  if (batch_ < 1) throw std::invalid_argument("FileDispatch: batch must be >= 1");
  if (rank_ == 0 && size_ > 1) server_ = std::thread([this] { serve(); });
}

FileDispatch::~FileDispatch() {
  // A rank that stopped early (fail-fast, signal) tells rank 0 it is leaving, so the server
  // does not wait for it; no file is consumed by that.
  if (rank_ != 0 && !exhausted_) {
    const int leaving = 0;
    MPI_Send(&leaving, 1, MPI_INT, 0, kRequestTag, comm_);
  }
  if (server_.joinable()) server_.join();
}

std::optional<int64_t> FileDispatch::take_local() {
  const int64_t start = next_batch_start_.fetch_add(batch_);
  if (start >= files_) return std::nullopt;
  local_begin_ = start;
  local_end_ = std::min<int64_t>(start + batch_, files_);
  return local_begin_++;
}

std::optional<int64_t> FileDispatch::next() {
  if (local_begin_ < local_end_) return local_begin_++;
  if (exhausted_) return std::nullopt;
  if (rank_ == 0) {
    auto index = take_local();
    if (!index) exhausted_ = true;
    return index;
  }
  const int request = 1;
  long long reply[2] = {0, 0};  // [begin, end)
  MPI_Send(&request, 1, MPI_INT, 0, kRequestTag, comm_);
  MPI_Recv(reply, 2, MPI_LONG_LONG, 0, kReplyTag, comm_, MPI_STATUS_IGNORE);
  local_begin_ = reply[0];
  local_end_ = reply[1];
  if (local_begin_ >= local_end_) {
    exhausted_ = true;
    return std::nullopt;
  }
  return local_begin_++;
}

void FileDispatch::serve() {
  int finished = 0;
  while (finished < size_ - 1) {
    int request = 0;
    MPI_Status status;
    MPI_Recv(&request, 1, MPI_INT, MPI_ANY_SOURCE, kRequestTag, comm_, &status);
    if (request == 0) {  // that rank is leaving without asking for more
      ++finished;
      continue;
    }
    const int64_t start = next_batch_start_.fetch_add(batch_);
    long long reply[2] = {start, std::min<int64_t>(start + batch_, files_)};
    if (start >= files_) {
      reply[0] = reply[1] = 0;
      ++finished;
    }
    MPI_Send(reply, 2, MPI_LONG_LONG, status.MPI_SOURCE, kReplyTag, comm_);
  }
}

}  // namespace imflow::mpi
