// The buffers of one deblending workspace (cuda/deblend.hpp), shared by cuda/deblend.cu (which
// fills them) and cuda/deblend_result.cpp (which reads the results back).
#pragma once
#include "cuda/buffers.hpp"
#include "cuda/deblend.hpp"
#include "cuda/deblend_clean.hpp"
#include "cuda/deblend_host_split.hpp"

namespace imflow::cuda {

using deblend_detail::BranchModel;
using deblend_detail::CleanObject;
using deblend_detail::DeblendCounters;
using deblend_detail::DeblendSummary;

struct DeblendBuffers {
  DeviceBuffer<int32_t> label_npix, label_first, label_last, label_xmin, label_xmax, label_rank;
  DeviceBuffer<int32_t> seg_pixel, seg_label, seg_npix, seg_off, seg_branches, seg_objects, obj_off, seg_order;
  DeviceBuffer<long long> seg_words, arena_off;
  DeviceBuffer<float> seg_thresh0;
  DeviceBuffer<uint32_t> keys_a, keys_b;  // the radix sorts (pixels by segment, allocated pixels by object)
  DeviceBuffer<int32_t> values_a, values_b;
  DeviceBuffer<int32_t> chain, branch_pixels, owner, nearest, arena;
  DeviceBuffer<float> weight_total, heap;
  DeviceBuffer<uint32_t> draw_flag, draw_index;
  DeviceBuffer<int32_t> rand_stream;  // SExtractor's draws (DeblendAllocation::sextractor_random)
  DeviceBuffer<int32_t> obj_seg, obj_bstart, obj_bnpix, obj_alloc, alloc_off, obj_npix, obj_pix_off, obj_iota;
  DeviceBuffer<float> obj_level;
  DeviceBuffer<BranchModel> model;
  DeviceBuffer<CleanObject> objects;
  DeviceBuffer<int32_t> obj_cell, cell_count, cell_off, cell_fill, cell_items, big_list, edge_count, edge_off, edges,
      survives, new_id;
  DeviceBuffer<uint8_t> big_flag;
  DeviceBuffer<deblend_detail::SextractorState> sex_state;  // clean_style sextractor
  DeviceBuffer<deblend_detail::SextractorEntry> sex_list;
  DeviceBuffer<int32_t> sex_owner, sex_positions;
  DeviceBuffer<deblend_detail::SextractorEntry> sex_heaps;  // the release and eviction heaps
  DeviceBuffer<DeblendCounters> counters;
  DeviceBuffer<unsigned char> temp;  // CUB's temporary storage
  PinnedBuffer<DeblendCounters> census;
  PinnedBuffer<DeblendSummary> summary;  // mapped: written by the device
  PinnedBuffer<DeblendRecord> records;   // mapped: written by the device
  PinnedBuffer<deblend_detail::HostSplitJob> host_jobs;  // mapped: the census' list
  deblend_detail::HostSplits host_splits;
  int32_t host_split_min = kHostSplitMinPixels;
  long long edge_capacity = 0;
  bool has_result = false;
};

}  // namespace imflow::cuda
