// Dynamic distribution of the input files over MPI ranks: rank 0 hands out batches of file
// indices on request (every rank lists the same sorted directory, so indices are enough); no
// static split, so a slow rank simply asks less often.
#pragma once
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

namespace imflow::mpi {

class FileDispatch {
 public:
  // Collective over `comm`: every rank constructs it with the same file count and batch size.
  FileDispatch(MPI_Comm comm, int64_t files, int batch);
  ~FileDispatch();  // rank 0 joins its server thread (after every rank has been told "done")
  FileDispatch(const FileDispatch&) = delete;
  FileDispatch& operator=(const FileDispatch&) = delete;

  // The next file index for this rank, or nullopt when all files have been handed out.
  // Safe to call from any one thread at a time (the flow graph's source node).
  std::optional<int64_t> next();

 private:
  std::optional<int64_t> take_local();
  void serve();  // rank 0: answer the other ranks until each was told there is no more work
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  int64_t files_;
  int batch_;
  std::atomic<int64_t> next_batch_start_{0};  // rank 0: the shared cursor
  int64_t local_begin_ = 0, local_end_ = 0;   // the batch this rank is working through
  bool exhausted_ = false;
  std::thread server_;
};

}  // namespace imflow::mpi
