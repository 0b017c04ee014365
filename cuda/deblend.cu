// Deblending on the device (cuda/deblend.hpp): the buffers, the CUB scans, sorts and selections,
// and the order of the jobs (cuda/deblend_jobs.hpp). Before the one synchronization: the label
// statistics, the segments SEP keeps in its order (a selection of their last pixels), their
// pixels grouped by a stable radix sort, the scans of their sizes and working areas. After it:
// the split (the largest on host threads, cuda/deblend_host_split.hpp; a warp per other one),
// the objects, the allocation (a scan numbers SEP's draws), the allocated pixels grouped by
// object (a second radix sort), the measurements, CLEAN and the outputs.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "cuda/buffers.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/deblend.hpp"
#include "cuda/deblend_buffers.hpp"
#include "cuda/deblend_kernels.hpp"

namespace imflow::cuda {

using namespace deblend_detail;

namespace {

int bits_for(uint64_t v) {
  int bits = 1;
  while (bits < 32 && (v >> bits) != 0) ++bits;
  return bits;
}

// CUB: the size of temporary storage a call needs (query), then the call with the buffer.
template <class F>
size_t cub_bytes(F&& call) {
  size_t bytes = 0;
  IMFLOW_CUDA_CHECK(call(nullptr, bytes));
  return bytes;
}
template <class F>
void cub_run(DeviceBuffer<unsigned char>& temp, F&& call) {
  size_t bytes = temp.capacity();
  IMFLOW_CUDA_CHECK(call(static_cast<void*>(temp.data()), bytes));
}

template <class T>
void fill_bytes(DeviceBuffer<T>& b, int value, size_t n, cudaStream_t stream) {
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(b.data(), value, n * sizeof(T), stream));
}

struct EndsSegment {
  DeblendPlan p;
  __device__ bool operator()(const int32_t& i) const { return ends_segment(p, i); }
};

void validate(const DeblendDeviceInput& in, const kernels::DeblendParams& params, const int32_t* labels_out) {
  if (params.nthresh < 1) throw std::invalid_argument("deblend: nthresh must be at least 1");
  if (!(params.mincont >= 0.0)) throw std::invalid_argument("deblend: mincont must be >= 0");
  if (params.minarea < 1) throw std::invalid_argument("deblend: minarea must be at least 1");
  if (params.clean && !(params.clean_param > 0.0)) throw std::invalid_argument("deblend: clean_param must be > 0");
  if (in.labels == nullptr || in.detection == nullptr || labels_out == nullptr)
    throw std::invalid_argument("deblend: missing image, labels or output");
  if (labels_out == in.labels) throw std::invalid_argument("deblend: the output may not alias the input labels");
  if (in.width < 0 || in.height < 0) throw std::invalid_argument("deblend: negative image size");
  if (in.nlabels_device == nullptr && in.nlabels < 0) throw std::invalid_argument("deblend: nlabels must be >= 0");
  if (in.width > 0 && in.height > std::numeric_limits<int32_t>::max() / in.width)
    throw std::length_error("deblend: images of 2^31 pixels or more are not supported on the GPU");
}

// An empty result (no segment), written by the host once the stream is idle.
void finish_empty(DeblendBuffers& B, int32_t* labels_out, int64_t npixels, int32_t segments, int32_t* nlabels_out,
                  cudaStream_t stream) {
  if (npixels > 0) IMFLOW_CUDA_CHECK(cudaMemsetAsync(labels_out, 0, static_cast<size_t>(npixels) * sizeof(int32_t), stream));
  if (nlabels_out != nullptr) IMFLOW_CUDA_CHECK(cudaMemsetAsync(nlabels_out, 0, sizeof(int32_t), stream));
  DeblendSummary s{};
  s.segments = segments;
  s.valid = 1;
  *B.summary.data() = s;
  B.host_splits.forget();
  B.has_result = true;
}

}  // namespace

void deblend(const DeblendDeviceInput& in, const kernels::DeblendParams& params, int32_t* labels_out,
             int32_t* nlabels_out, cudaStream_t stream, DeblendWorkspace& workspace) {
  validate(in, params, labels_out);
  DeblendBuffers& B = workspace.buffers();
  B.has_result = false;
  if (B.summary.capacity() == 0) {
    B.summary.reserve(1);
    *B.summary.data() = DeblendSummary{};
  }
  B.census.reserve(1);
  const int32_t N = static_cast<int32_t>(in.width * in.height);
  if (N == 0) {
    IMFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));  // the summary is written from the host
    finish_empty(B, labels_out, 0, 0, nlabels_out, stream);
    return;
  }
  const int64_t bound64 = in.nlabels_device != nullptr ? (in.nlabels > 0 ? in.nlabels : (int64_t{N} + 1) / 2 + 1)
                                                       : in.nlabels;
  const int32_t L = static_cast<int32_t>(std::min<int64_t>(bound64, std::numeric_limits<int32_t>::max() - 2));
  const size_t L1 = static_cast<size_t>(L) + 1;

  // ---- Census.
  B.label_npix.reserve(L1);
  B.label_first.reserve(L1);
  B.label_last.reserve(L1);
  B.label_xmin.reserve(L1);
  B.label_xmax.reserve(L1);
  B.label_rank.reserve(L1);
  B.seg_pixel.reserve(L1);
  B.seg_label.reserve(L1);
  B.seg_npix.reserve(L1);
  B.seg_off.reserve(L1);
  B.seg_words.reserve(L1);
  B.arena_off.reserve(L1);
  B.keys_a.reserve(N);
  B.keys_b.reserve(N);
  B.values_a.reserve(N);
  B.values_b.reserve(N);
  B.counters.reserve(1);

  DeblendPlan p;
  p.im.cd = in.detection;
  p.im.value = in.measurement != nullptr ? in.measurement : in.detection;
  p.im.thresh = in.threshold_map;
  p.im.thresh0 = in.threshold;
  p.im.width = static_cast<int32_t>(in.width);
  p.labels = in.labels;
  p.width = static_cast<int32_t>(in.width);
  p.height = static_cast<int32_t>(in.height);
  p.label_bound = L;
  p.nthresh = params.nthresh;
  p.minarea = params.minarea;
  p.min_pixels = std::min(params.minarea, 3);
  p.mode = params.allocation == kernels::DeblendAllocation::sep_random      ? 0
           : params.allocation == kernels::DeblendAllocation::most_probable ? 1 : 2;
  p.mincont = params.mincont;
  p.beta = params.clean_param;
  p.clean = params.clean;
  p.clean_style = params.clean_style == kernels::DeblendCleanStyle::sextractor ? 1 : 0;
  p.blank_lag = params.blank_lag;
  p.memory_bufsize = params.memory_bufsize;
  p.memory_objstack = params.memory_objstack;
  p.counters = B.counters.data();
  p.label_npix = B.label_npix.data();
  p.label_first = B.label_first.data();
  p.label_last = B.label_last.data();
  p.label_xmin = B.label_xmin.data();
  p.label_xmax = B.label_xmax.data();
  p.label_rank = B.label_rank.data();
  p.seg_pixel = B.seg_pixel.data();
  p.seg_label = B.seg_label.data();
  p.seg_npix = B.seg_npix.data();
  p.seg_off = B.seg_off.data();
  p.seg_words = B.seg_words.data();
  p.arena_off = B.arena_off.data();
  p.host_min = B.host_split_min;
  if (p.host_min > 0) {  // the host's segments are disjoint, of host_min pixels or more
    B.host_jobs.reserve(static_cast<size_t>(std::min<int64_t>(L1, N / p.host_min + 1)));
    p.host_jobs = B.host_jobs.device_pointer();
  }

  const int key_bits = bits_for(static_cast<uint64_t>(L));
  int32_t* num_segments = &B.counters.data()->segments;
  auto select_segments = [&](void* t, size_t& bytes) {
    return cub::DeviceSelect::If(t, bytes, B.values_a.data(), B.seg_pixel.data(), num_segments, N, EndsSegment{p}, stream);
  };
  auto scan_npix = [&](void* t, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(t, bytes, B.seg_npix.data(), B.seg_off.data(), static_cast<int64_t>(L1), stream);
  };
  auto scan_words = [&](void* t, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(t, bytes, B.seg_words.data(), B.arena_off.data(), static_cast<int64_t>(L1),
                                         stream);
  };
  // The sorts' double buffers are set afresh for each call (a run flips their selectors).
  cub::DoubleBuffer<uint32_t> keys;
  cub::DoubleBuffer<int32_t> values;
  auto sort_pixels = [&](void* t, size_t& bytes) {
    keys = cub::DoubleBuffer<uint32_t>(B.keys_a.data(), B.keys_b.data());
    values = cub::DoubleBuffer<int32_t>(B.values_a.data(), B.values_b.data());
    return cub::DeviceRadixSort::SortPairs(t, bytes, keys, values, N, 0, key_bits, stream);
  };
  B.temp.reserve(std::max({cub_bytes(select_segments), cub_bytes(scan_npix), cub_bytes(scan_words), cub_bytes(sort_pixels)}));

  fill_bytes(B.counters, 0, 1, stream);
  fill_bytes(B.label_npix, 0, L1, stream);
  fill_bytes(B.label_first, 0x7f, L1, stream);  // beyond any pixel
  fill_bytes(B.label_last, 0xff, L1, stream);  // -1
  fill_bytes(B.label_xmin, 0x7f, L1, stream);  // 0x7f7f7f7f, beyond any column
  fill_bytes(B.label_xmax, 0xff, L1, stream);
  fill_bytes(B.label_rank, 0xff, L1, stream);
  fill_bytes(B.seg_npix, 0, L1, stream);
  fill_bytes(B.seg_words, 0, L1, stream);
  launch_start(p, in.nlabels_device, static_cast<int32_t>(std::min<int64_t>(in.nlabels, L)), stream);
  launch_label_stats(p, B.values_a.data(), N, stream);
  cub_run(B.temp, select_segments);
  launch_segments(p, L, stream);
  cub_run(B.temp, scan_npix);
  cub_run(B.temp, scan_words);
  if (p.host_min > 0) launch_host_split_list(p, L, stream);
  launch_pixel_keys(p, B.keys_a.data(), static_cast<uint32_t>(L), N, stream);
  cub_run(B.temp, sort_pixels);
  launch_census(p, in.threshold_device, stream);
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(B.census.data(), B.counters.data(), sizeof(DeblendCounters), cudaMemcpyDeviceToHost, stream));
  // The one synchronization: the sizes of everything below.
  IMFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  const DeblendCounters census = *B.census.data();
  if (census.error == kErrorLabelRange) throw std::invalid_argument("deblend: a label outside 1..nlabels");
  const long long previous_edges = B.summary.data()->valid ? B.summary.data()->edges : 0;
  B.summary.data()->valid = 0;
  const int32_t S = census.segments, K = census.kept;
  if (S == 0) {
    finish_empty(B, labels_out, N, 0, nlabels_out, stream);
    return;
  }
  if (in.threshold_device != nullptr) p.im.thresh0 = census.threshold;
  const int64_t Ob = K / p.min_pixels + 1;  // every object has at least min_pixels pixels
  if (Ob >= (int64_t{1} << 30)) throw std::length_error("deblend: too many possible objects for the GPU");
  const size_t S1 = static_cast<size_t>(S) + 1, K1 = static_cast<size_t>(K) + 1, O1 = static_cast<size_t>(Ob) + 1;

  // ---- Buffers of the rest (the stream is idle: growing them costs no extra wait).
  int32_t* P = values.Current();
  int32_t* free_values = values.Alternate();
  B.arena.reserve(static_cast<size_t>(std::max<long long>(1, census.arena_words)));
  for (auto* b : {&B.chain, &B.branch_pixels, &B.owner, &B.nearest}) b->reserve(K1);
  B.weight_total.reserve(K1);
  B.heap.reserve(K1);
  B.draw_flag.reserve(K1);
  B.draw_index.reserve(K1);
  if (p.mode == 2) B.rand_stream.reserve(K1);
  for (auto* b : {&B.seg_branches, &B.seg_objects, &B.obj_off, &B.seg_order}) b->reserve(S1);
  B.seg_thresh0.reserve(S1);
  for (auto* b : {&B.obj_seg, &B.obj_bstart, &B.obj_bnpix, &B.obj_alloc, &B.alloc_off, &B.obj_npix, &B.obj_pix_off,
                  &B.obj_iota, &B.obj_cell, &B.cell_items, &B.big_list, &B.edge_count, &B.edge_off, &B.survives,
                  &B.new_id})
    b->reserve(O1);
  B.obj_level.reserve(O1);
  B.model.reserve(O1);
  B.objects.reserve(O1);
  B.big_flag.reserve(O1);
  B.records.reserve(O1);
  CleanPlan c;
  c.ncx = static_cast<int32_t>((in.width + 31) / 32);
  c.ncy = static_cast<int32_t>((in.height + 31) / 32);
  const size_t cells = static_cast<size_t>(c.ncx) * c.ncy;
  B.cell_count.reserve(cells + 1);
  B.cell_off.reserve(cells + 1);
  B.cell_fill.reserve(cells + 1);
  B.edge_capacity = std::max<long long>({B.edge_capacity, 2 * Ob + 1024, previous_edges + previous_edges / 4});
  B.edges.reserve(static_cast<size_t>(B.edge_capacity));

  p.pixels = P;
  p.chain = B.chain.data();
  p.branch_pixels = B.branch_pixels.data();
  p.pixel_branch = labels_out;  // scratch until painted
  p.arena = B.arena.data();
  p.seg_branches = B.seg_branches.data();
  p.seg_objects = B.seg_objects.data();
  p.obj_off = B.obj_off.data();
  p.seg_thresh0 = B.seg_thresh0.data();
  p.owner = B.owner.data();
  p.weight_total = B.weight_total.data();
  p.nearest = B.nearest.data();
  p.draw_flag = B.draw_flag.data();
  p.draw_index = B.draw_index.data();
  p.rand_stream = B.rand_stream.data();
  p.heap = B.heap.data();
  p.obj_seg = B.obj_seg.data();
  p.obj_bstart = B.obj_bstart.data();
  p.obj_bnpix = B.obj_bnpix.data();
  p.obj_alloc = B.obj_alloc.data();
  p.alloc_off = B.alloc_off.data();
  p.obj_npix = B.obj_npix.data();
  p.obj_pix_off = B.obj_pix_off.data();
  p.obj_level = B.obj_level.data();
  p.model = B.model.data();
  p.objects = B.objects.data();
  c.obj_cell = B.obj_cell.data();
  c.cell_count = B.cell_count.data();
  c.cell_off = B.cell_off.data();
  c.cell_fill = B.cell_fill.data();
  c.cell_items = B.cell_items.data();
  c.big_flag = B.big_flag.data();
  c.big_list = B.big_list.data();
  c.edge_count = B.edge_count.data();
  c.edge_off = B.edge_off.data();
  c.edges = B.edges.data();
  c.edge_capacity = B.edge_capacity;
  c.survives = B.survives.data();
  c.new_id = B.new_id.data();
  c.merging = params.clean && params.clean_style == kernels::DeblendCleanStyle::sextractor;
  if (c.merging) {
    B.sex_state.reserve(O1);
    B.sex_list.reserve(O1);
    B.sex_owner.reserve(O1);
    B.sex_positions.reserve(O1);
    B.sex_heaps.reserve(2 * O1);
    c.state = B.sex_state.data();
    c.list = B.sex_list.data();
    c.owner = B.sex_owner.data();
    c.positions = B.sex_positions.data();
    c.release_heap = B.sex_heaps.data();
    c.evict_heap = B.sex_heaps.data() + O1;
  }

  auto sort_order = [&](void* t, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairsDescending(t, bytes, B.keys_a.data(), B.keys_b.data(), free_values,
                                                     B.seg_order.data(), S, 0, 32, stream);
  };
  auto scan_i32 = [&](int32_t* from, int32_t* to, size_t n) {
    return [=](void* t, size_t& bytes) {
      return cub::DeviceScan::ExclusiveSum(t, bytes, from, to, static_cast<int64_t>(n), stream);
    };
  };
  auto scan_draws = [&](void* t, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(t, bytes, B.draw_flag.data(), B.draw_index.data(), static_cast<int64_t>(K1), stream);
  };
  cub::DoubleBuffer<uint32_t> akeys;
  cub::DoubleBuffer<int32_t> avalues;
  const int alloc_bits = bits_for(static_cast<uint64_t>(Ob));
  auto sort_alloc = [&](void* t, size_t& bytes) {
    akeys = cub::DoubleBuffer<uint32_t>(B.keys_a.data(), B.keys_b.data());
    avalues = cub::DoubleBuffer<int32_t>(B.values_a.data(), B.values_b.data());
    return cub::DeviceRadixSort::SortPairs(t, bytes, akeys, avalues, K, 0, alloc_bits, stream);
  };
  int32_t* num_big = &B.counters.data()->big;
  auto select_big = [&](void* t, size_t& bytes) {
    return cub::DeviceSelect::Flagged(t, bytes, B.obj_iota.data(), B.big_flag.data(), B.big_list.data(), num_big, Ob, stream);
  };
  B.temp.reserve(std::max({cub_bytes(sort_order), cub_bytes(scan_i32(B.seg_objects.data(), B.obj_off.data(), S1)),
                           cub_bytes(scan_draws), cub_bytes(sort_alloc),
                           cub_bytes(scan_i32(B.obj_alloc.data(), B.alloc_off.data(), O1)),
                           cub_bytes(scan_i32(B.cell_count.data(), B.cell_off.data(), cells + 1)), cub_bytes(select_big)}));

  // ---- The split: the largest segments on the host (in order), the others on the device, largest first.
  const int32_t H = census.host_splits;
  B.host_splits.fetch(p, B.host_jobs.data(), H, stream);
  launch_order_keys(p, B.keys_a.data(), free_values, S, stream);
  cub_run(B.temp, sort_order);
  launch_tree(p, B.seg_order.data() + H, S - H, stream);
  B.host_splits.split(p, stream);

  // ---- Objects and models.
  fill_bytes(B.seg_objects, 0, S1, stream);
  launch_object_counts(p, S, stream);
  cub_run(B.temp, scan_i32(B.seg_objects.data(), B.obj_off.data(), S1));
  launch_object_total(p, stream);
  launch_objects(p, S, stream);
  launch_models(p, Ob, stream);

  // ---- The allocation: SEP's draws numbered over the image.
  fill_bytes(B.draw_flag, 0, K1, stream);
  fill_bytes(B.obj_alloc, 0, O1, stream);
  launch_weights(p, K, stream);
  cub_run(B.temp, scan_draws);
  if (p.mode == 2) launch_rand_stream(p, stream);
  launch_allocate(p, K, stream);

  // ---- Each object's pixels, then SEP's measurements.
  launch_alloc_keys(p, B.keys_a.data(), B.values_a.data(), static_cast<uint32_t>(Ob), K, stream);
  cub_run(B.temp, sort_alloc);
  p.alloc_sorted = avalues.Current();
  cub_run(B.temp, scan_i32(B.obj_alloc.data(), B.alloc_off.data(), O1));
  fill_bytes(B.obj_npix, 0, O1, stream);
  launch_npix(p, Ob, stream);
  cub_run(B.temp, scan_i32(B.obj_npix.data(), B.obj_pix_off.data(), O1));
  launch_measure(p, Ob, stream);

  // ---- CLEAN.
  fill_bytes(B.survives, 0, O1, stream);
  if (params.clean) {
    fill_bytes(B.cell_count, 0, cells + 1, stream);
    fill_bytes(B.cell_fill, 0, cells + 1, stream);
    fill_bytes(B.edge_count, 0, O1, stream);
    launch_clean_cells(p, c, B.obj_iota.data(), Ob, stream);
    cub_run(B.temp, scan_i32(B.cell_count.data(), B.cell_off.data(), cells + 1));
    launch_clean_fill(p, c, Ob, stream);
    cub_run(B.temp, select_big);
    launch_clean_count(p, c, Ob, stream);
    cub_run(B.temp, scan_i32(B.edge_count.data(), B.edge_off.data(), O1));
    launch_clean_store(p, c, Ob, stream);
    launch_clean_resolve(p, c, stream);
  } else {
    launch_survive_all(p, c, Ob, stream);
  }
  cub_run(B.temp, scan_i32(B.survives.data(), B.new_id.data(), O1));

  // ---- Outputs.
  IMFLOW_CUDA_CHECK(cudaMemsetAsync(labels_out, 0, static_cast<size_t>(N) * sizeof(int32_t), stream));
  launch_paint(p, c, labels_out, in.detected, K, stream);
  launch_records(p, c, B.records.device_pointer(), Ob, stream);
  launch_summary(p, c, B.summary.device_pointer(), nlabels_out, stream);
  B.has_result = true;
}

}  // namespace imflow::cuda
