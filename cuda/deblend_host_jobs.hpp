// Which segments the host splits (cuda/deblend_host_split.hpp), host and device: the census
// lists them, and the launch order puts them first so that the device's tree kernel skips them.
// One lane of a warp builds a segment's tree (cuda/deblend_tree.hpp), at about 2 us per pixel: a
// galaxy of 10^6 pixels held the device for seconds while a host core splits it in a fraction.
#pragma once
#include <cstdint>

#include "cuda/deblend_jobs.hpp"

namespace imflow::cuda::deblend_detail {

// A box of at most this many pixels per segment pixel is laid out on the host; a thinner shape
// (a satellite trail across a mosaic) stays on the device.
constexpr int64_t kHostSplitBoxPerPixel = 16;

// Segment r is split on the host: at least host_min pixels, a compact box (indexed in int32), and
// connected as far as its width tells (a wider one is left to the device, which reports it).
IMFLOW_HOST_DEVICE inline bool split_on_host(const DeblendPlan& p, int32_t r) {
  const int32_t n = p.seg_npix[r];
  if (p.host_min <= 0 || n < p.host_min) return false;
  const int32_t l = p.seg_label[r];
  const int64_t width = static_cast<int64_t>(p.label_xmax[l]) - p.label_xmin[l] + 1;
  const int64_t height = static_cast<int64_t>(p.label_last[l] / p.width) - p.label_first[l] / p.width + 1;
  return width <= n && width * height <= kHostSplitBoxPerPixel * n && width * height <= INT32_MAX;
}

// Segment r, once the scans have given its pixels' offset: listed when the host splits it.
IMFLOW_HOST_DEVICE inline void host_split_list_job(const DeblendPlan& p, int32_t r) {
  if (!split_on_host(p, r)) return;
  const int32_t l = p.seg_label[r];
  HostSplitJob job;
  job.segment = r;
  job.offset = p.seg_off[r];
  job.npix = p.seg_npix[r];
  job.x0 = p.label_xmin[l];
  job.y0 = p.label_first[l] / p.width;
  job.width = p.label_xmax[l] - job.x0 + 1;
  job.height = p.label_last[l] / p.width - job.y0 + 1;
  p.host_jobs[atomic_add(&p.counters->host_splits, 1)] = job;
}

// The key of segment r in the launch order (sorted descending): the host's segments first,
// then the largest.
IMFLOW_HOST_DEVICE inline uint32_t launch_order_key(const DeblendPlan& p, int32_t r) {
  return split_on_host(p, r) ? UINT32_MAX : static_cast<uint32_t>(p.seg_npix[r]);
}

// One host split's inputs, in mapped host memory the device writes (npix entries each): the
// segment's pixels (image indices) in the census's order, and their detection (and threshold).
struct HostSplitFetch {
  int32_t offset = 0, npix = 0;
  int32_t* pixels = nullptr;
  float *detection = nullptr, *threshold = nullptr;  // threshold: null without a threshold map
};

IMFLOW_HOST_DEVICE inline void host_split_fetch_job(const DeblendPlan& p, const HostSplitFetch& f, int32_t e) {
  const int32_t pixel = p.pixels[f.offset + e];
  f.pixels[e] = pixel;
  f.detection[e] = p.im.cd[pixel];
  if (f.threshold != nullptr) f.threshold[e] = p.im.thresh[pixel];
}

// One host split's results, in mapped host memory the device reads (npix entries each): the
// chain and the kept branches' pixels (image pixel indices), each pixel's branch in raster
// order, and the branch records (start, npix and level bits, `branches` entries each).
struct HostSplitResult {
  int32_t segment = 0, offset = 0, npix = 0, branches = 0, error = 0;
  float thresh0 = 0.0f;
  const int32_t *chain = nullptr, *branch_pixels = nullptr, *pixel_branch = nullptr, *records = nullptr;
};

// Entry e of a host split's results into the plan's arrays, as tree_job would have left them.
IMFLOW_HOST_DEVICE inline void host_split_result_job(const DeblendPlan& p, const HostSplitResult& h, int32_t e) {
  p.chain[h.offset + e] = h.chain[e];
  p.branch_pixels[h.offset + e] = h.branch_pixels[e];
  p.pixel_branch[p.pixels[h.offset + e]] = h.pixel_branch[e];
  if (e < h.branches) {
    const int32_t l = p.seg_label[h.segment];
    const TreeLayout L(h.npix, static_cast<int64_t>(p.label_xmax[l]) - p.label_xmin[l] + 1, p.min_pixels);
    int32_t* records = p.arena + p.arena_off[h.segment] + L.branches;
    for (int k = 0; k < 3; ++k) records[k * L.cnodes_cap + e] = h.records[k * h.branches + e];
  }
  if (e == 0) {
    p.seg_branches[h.segment] = h.branches;
    p.seg_thresh0[h.segment] = h.thresh0;
    if (h.error != kErrorNone) report_error(&p.counters->error, h.error);
  }
}

}  // namespace imflow::cuda::deblend_detail
