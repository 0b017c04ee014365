// HostSplits (cuda/deblend_host_split.hpp).
#include "cuda/deblend_host_split.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <cstring>
#include <memory>

#include "cuda/cuda_check.hpp"
#include "cuda/deblend_kernels.hpp"

namespace imflow::cuda::deblend_detail {
namespace {

int64_t box_pixels(const HostSplitJob& j) { return static_cast<int64_t>(j.width) * j.height; }
// A segment's largest branch count (TreeLayout's cnodes_cap): room for its records.
int64_t record_room(const HostSplitJob& j, int min_pixels) { return 2 * (j.npix / min_pixels) + 2; }

// An image pixel's index in the job's box, and back.
int32_t to_box(const HostSplitJob& j, int32_t image_width, int32_t pixel) {
  const int32_t y = pixel / image_width;
  return (y - j.y0) * j.width + (pixel - y * image_width - j.x0);
}
int32_t to_image(const HostSplitJob& j, int32_t image_width, int32_t box) {
  const int32_t y = box / j.width;
  return (j.y0 + y) * image_width + j.x0 + (box - y * j.width);
}

}  // namespace

void HostSplits::fetch(const DeblendPlan& p, const HostSplitJob* jobs, int32_t count, cudaStream_t stream) {
  jobs_.assign(jobs, jobs + count);
  pixel_at_.assign(1, 0);
  record_at_.assign(1, 0);
  for (const HostSplitJob& j : jobs_) {
    pixel_at_.push_back(pixel_at_.back() + j.npix);
    record_at_.push_back(record_at_.back() + 3 * record_room(j, p.min_pixels));
  }
  const auto pixels = static_cast<size_t>(pixel_at_.back());
  for (auto* b : {&pixels_, &chain_, &branch_pixels_, &pixel_branch_}) b->reserve(pixels);
  records_.reserve(static_cast<size_t>(record_at_.back()));
  detection_.reserve(pixels);
  if (p.im.thresh != nullptr) threshold_.reserve(pixels);
  HostSplitFetch f;
  int32_t* const pixels_device = pixels_.device_pointer();
  float* const detection_device = detection_.device_pointer();
  float* const threshold_device = p.im.thresh != nullptr ? threshold_.device_pointer() : nullptr;
  for (size_t k = 0; k < jobs_.size(); ++k) {
    f.offset = jobs_[k].offset;
    f.npix = jobs_[k].npix;
    f.pixels = pixels_device + pixel_at_[k];
    f.detection = detection_device + pixel_at_[k];
    f.threshold = threshold_device != nullptr ? threshold_device + pixel_at_[k] : nullptr;
    launch_host_split_fetch(p, f, stream);
  }
  if (count > 0) IMFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void HostSplits::split_one(const DeblendPlan& p, size_t k) {
  const HostSplitJob& j = jobs_[k];
  const int32_t n = j.npix, zero = 0, last_column = j.width - 1;
  // The box's values at the segment's pixels: tree_job reads no other.
  const auto box_detection = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(box_pixels(j)));
  const auto box_threshold = p.im.thresh != nullptr
                                 ? std::make_unique_for_overwrite<float[]>(static_cast<size_t>(box_pixels(j)))
                                 : nullptr;
  int32_t* box_list = pixels_.data() + pixel_at_[k];
  const float* detection = detection_.data() + pixel_at_[k];
  const float* threshold = p.im.thresh != nullptr ? threshold_.data() + pixel_at_[k] : nullptr;
  for (int32_t e = 0; e < n; ++e) {
    const int32_t b = box_list[e] = to_box(j, p.width, box_list[e]);
    box_detection[b] = detection[e];
    if (threshold != nullptr) box_threshold[b] = threshold[e];
  }
  int32_t* chain = chain_.data() + pixel_at_[k];
  int32_t* branch_pixels = branch_pixels_.data() + pixel_at_[k];
  std::memset(branch_pixels, 0, static_cast<size_t>(n) * sizeof(int32_t));  // box indices where no branch writes
  const TreeLayout layout(n, j.width, p.min_pixels);
  const auto arena = std::make_unique_for_overwrite<int32_t[]>(static_cast<size_t>(layout.words));
  const auto box_branch = std::make_unique_for_overwrite<int32_t[]>(static_cast<size_t>(box_pixels(j)));
  const long long arena_off = 0;
  const int32_t seg_off[2] = {0, n};
  HostSplitResult& h = results_[k];
  TreeArgs a;
  a.im.cd = a.im.value = box_detection.get();
  a.im.thresh = box_threshold.get();
  a.im.thresh0 = p.im.thresh0;
  a.im.width = j.width;
  a.pixels = box_list;
  a.seg_off = seg_off;
  a.seg_label = &zero;
  a.label_xmin = &zero;
  a.label_xmax = &last_column;
  a.arena_off = &arena_off;
  a.arena = arena.get();
  a.chain = chain;
  a.branch_pixels = branch_pixels;
  a.pixel_branch = box_branch.get();
  a.seg_branches = &h.branches;
  a.seg_thresh0 = &h.thresh0;
  a.error = &h.error;
  a.nthresh = p.nthresh;
  a.mincont = p.mincont;
  a.min_pixels = p.min_pixels;
  a.lowest_thresh = p.clean_style == 1;
  tree_job(Team{}, a, 0);

  int32_t* pixel_branch = pixel_branch_.data() + pixel_at_[k];
  for (int32_t e = 0; e < n; ++e) {
    pixel_branch[e] = box_branch[box_list[e]];
    chain[e] = to_image(j, p.width, chain[e]);
    branch_pixels[e] = to_image(j, p.width, branch_pixels[e]);
  }
  int32_t* records = records_.data() + record_at_[k];
  for (int32_t b = 0; b < h.branches; ++b) {
    const BranchRecord r = branch_record(arena.get(), layout, b);
    records[b] = r.start;
    records[h.branches + b] = r.npix;
    std::memcpy(records + 2 * h.branches + b, &r.level, sizeof(float));
  }
}

void HostSplits::split(const DeblendPlan& p, cudaStream_t stream) {
  results_.assign(jobs_.size(), HostSplitResult{});
  // Isolated: the stream's host thread, waiting here, must not pick up another graph task.
  tbb::this_task_arena::isolate(
      [&] { tbb::parallel_for(size_t{0}, jobs_.size(), [&](size_t k) { split_one(p, k); }); });
  int32_t* const chain_device = chain_.device_pointer();
  int32_t* const branch_pixels_device = branch_pixels_.device_pointer();
  int32_t* const pixel_branch_device = pixel_branch_.device_pointer();
  int32_t* const records_device = records_.device_pointer();
  for (size_t k = 0; k < jobs_.size(); ++k) {
    HostSplitResult& h = results_[k];
    h.segment = jobs_[k].segment;
    h.offset = jobs_[k].offset;
    h.npix = jobs_[k].npix;
    h.chain = chain_device + pixel_at_[k];
    h.branch_pixels = branch_pixels_device + pixel_at_[k];
    h.pixel_branch = pixel_branch_device + pixel_at_[k];
    h.records = records_device + record_at_[k];
    launch_host_split_result(p, h, stream);
  }
}

}  // namespace imflow::cuda::deblend_detail
