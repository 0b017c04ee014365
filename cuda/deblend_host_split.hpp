// The largest segments' splits on the host (cuda/deblend_host_jobs.hpp says which): their pixels
// and values written to the host at the census, laid out in their boxes, tree_job
// (cuda/deblend_branches.hpp) run on them by host threads while the device's tree kernel splits
// the others, and the results written into the device's arrays by one kernel per segment. The
// same code as the device's, so the same trees, chains and branches.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "cuda/buffers.hpp"
#include "cuda/deblend_host_jobs.hpp"

namespace imflow::cuda::deblend_detail {

class HostSplits {
 public:
  // With the stream idle after the census: the `count` listed segments' pixels and their
  // detection (and threshold) values to the host; waits for them.
  void fetch(const DeblendPlan& p, const HostSplitJob* jobs, int32_t count, cudaStream_t stream);
  // Split the fetched segments (in parallel), then enqueue their results into p's arrays.
  void split(const DeblendPlan& p, cudaStream_t stream);
  // The segments of the last call (forget: none).
  int32_t count() const { return static_cast<int32_t>(jobs_.size()); }
  void forget() { jobs_.clear(); }

 private:
  void split_one(const DeblendPlan& p, size_t k);  // job k's tree, chain and branches, host side
  std::vector<HostSplitJob> jobs_;
  std::vector<int64_t> pixel_at_, record_at_;  // each job's first entry in the buffers below
  PinnedBuffer<int32_t> pixels_;  // per job: its pixels (image indices), then box indices once split
  PinnedBuffer<float> detection_, threshold_;  // per job: its pixels' values
  PinnedBuffer<int32_t> chain_, branch_pixels_, pixel_branch_, records_;  // read by the device
  std::vector<HostSplitResult> results_;
};

}  // namespace imflow::cuda::deblend_detail
