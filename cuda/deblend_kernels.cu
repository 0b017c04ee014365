// The deblending's kernels: each runs one job of cuda/deblend_jobs.hpp or cuda/deblend_clean.hpp
// per index (grid-stride), so the device does exactly what the host-side jobs do. Compiled
// without FMA contraction (cuda/CMakeLists.txt): SEP's float/double arithmetic rounds as on the
// CPU.
#include "cuda/cuda_check.hpp"
#include "cuda/deblend_clean_sextractor.hpp"
#include "cuda/deblend_host_jobs.hpp"
#include "cuda/deblend_kernels.hpp"
#include "cuda/device_common.cuh"

namespace imflow::cuda::deblend_detail {
namespace {

constexpr int kThreads = 256;
// One segment (or object) per warp (cuda/deblend_team.hpp): the sequential logic runs on one
// lane, the work per pixel on all 32.
constexpr int kTreeThreads = 64;

__device__ __forceinline__ int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }
__device__ __forceinline__ int64_t at_most(int64_t n, int64_t count) { return count < n ? count : n; }
// This thread's place in its warp's team, and the warps' grid stride (one job per warp).
__device__ __forceinline__ Team warp_team() {
  Team team;
  team.lane = static_cast<int>(threadIdx.x & 31);
  team.size = 32;
  return team;
}
__device__ __forceinline__ int64_t first_warp() { return first_index() / 32; }
__device__ __forceinline__ int64_t warp_stride() { return stride() / 32; }

// A kernel running `body` for indices [0, limit) where limit is computed on the device.
#define IMFLOW_DEBLEND_KERNEL(name, limit, body, ...)                                  \
  __global__ void name(__VA_ARGS__, int64_t n) {                                        \
    const int64_t end = (limit);                                                        \
    for (int64_t i = first_index(); i < end; i += stride()) {                           \
      const int32_t k = static_cast<int32_t>(i);                                        \
      (void)k;                                                                          \
      body;                                                                             \
    }                                                                                   \
  }

__global__ void start_kernel(DeblendPlan p, const int32_t* nlabels_device, int32_t nlabels) {
  int32_t n = nlabels_device != nullptr ? *nlabels_device : nlabels;
  if (n < 0 || n > p.label_bound) {
    report_error(&p.counters->error, kErrorLabelRange);
    n = n < 0 ? 0 : p.label_bound;
  }
  p.counters->nlabels = n;
}

IMFLOW_DEBLEND_KERNEL(label_stats_kernel, n, (iota[k] = k, label_stats_job(p, k)), DeblendPlan p, int32_t* iota)
IMFLOW_DEBLEND_KERNEL(segment_kernel, at_most(n, p.counters->segments), segment_job(p, k), DeblendPlan p)
IMFLOW_DEBLEND_KERNEL(pixel_key_kernel, n, keys[k] = pixel_key(p, k, sentinel), DeblendPlan p, uint32_t* keys,
                      uint32_t sentinel)

__global__ void census_kernel(DeblendPlan p, const double* threshold_device) {
  const int32_t s = p.counters->segments;
  p.counters->kept = p.seg_off[s];
  p.counters->arena_words = p.arena_off[s];
  if (threshold_device != nullptr) p.counters->threshold = static_cast<float>(*threshold_device);
}

IMFLOW_DEBLEND_KERNEL(host_split_list_kernel, at_most(n, p.counters->segments), host_split_list_job(p, k),
                      DeblendPlan p)
IMFLOW_DEBLEND_KERNEL(host_split_fetch_kernel, n, host_split_fetch_job(p, f, k), DeblendPlan p, HostSplitFetch f)
IMFLOW_DEBLEND_KERNEL(host_split_result_kernel, n, host_split_result_job(p, h, k), DeblendPlan p, HostSplitResult h)
IMFLOW_DEBLEND_KERNEL(order_key_kernel, n, (keys[k] = launch_order_key(p, k), values[k] = k),
                      DeblendPlan p, uint32_t* keys, int32_t* values)
__global__ void tree_kernel(TreeArgs args, const int32_t* order, int64_t n) {
  const Team team = warp_team();
  for (int64_t i = first_warp(); i < n; i += warp_stride()) tree_job(team, args, order[i]);
}
IMFLOW_DEBLEND_KERNEL(object_count_kernel, n, object_count_job(p, k), DeblendPlan p)

__global__ void object_total_kernel(DeblendPlan p) { p.counters->objects = p.obj_off[p.counters->segments]; }

IMFLOW_DEBLEND_KERNEL(objects_kernel, n, objects_job(p, k), DeblendPlan p)
// One warp per object (its sums in SEP's order through its stage, cuda/deblend_walk.hpp).
template <bool Model>
__global__ void object_warp_kernel(DeblendPlan p, int64_t n) {
  __shared__ float stage[kTreeThreads / 32][kStageFloats];
  Team team = warp_team();
  team.stage = stage[threadIdx.x / 32];
  const int64_t end = at_most(n, p.counters->objects);
  for (int64_t i = first_warp(); i < end; i += warp_stride()) {
    if (Model) model_job(team, p, static_cast<int32_t>(i));
    else measure_job(team, p, static_cast<int32_t>(i));
  }
}
IMFLOW_DEBLEND_KERNEL(weights_kernel, n, weights_job(p, k), DeblendPlan p)
IMFLOW_DEBLEND_KERNEL(allocate_kernel, n, allocate_job(p, k), DeblendPlan p)

__global__ void rand_stream_kernel(DeblendPlan p) { rand_stream_job(p); }
IMFLOW_DEBLEND_KERNEL(alloc_key_kernel, n, (keys[k] = alloc_key(p, k, sentinel), values[k] = k), DeblendPlan p,
                      uint32_t* keys, int32_t* values, uint32_t sentinel)
IMFLOW_DEBLEND_KERNEL(npix_kernel, at_most(n, p.counters->objects), npix_job(p, k), DeblendPlan p)

__global__ void clean_cells_kernel(DeblendPlan p, CleanPlan c, int32_t* iota, int64_t n) {
  const int64_t objects = p.counters->objects;
  for (int64_t i = first_index(); i < n; i += stride()) {
    const int32_t o = static_cast<int32_t>(i);
    iota[o] = o;
    if (i < objects) clean_cell_job(p, c, o);
    else c.big_flag[o] = 0;
  }
}

IMFLOW_DEBLEND_KERNEL(clean_fill_kernel, at_most(n, p.counters->objects), clean_fill_job(p, c, k), DeblendPlan p,
                      CleanPlan c)
IMFLOW_DEBLEND_KERNEL(clean_count_kernel, at_most(n, p.counters->objects), clean_count_job(p, c, k), DeblendPlan p,
                      CleanPlan c)
IMFLOW_DEBLEND_KERNEL(clean_store_kernel, at_most(n, p.counters->objects), clean_store_job(p, c, k), DeblendPlan p,
                      CleanPlan c)
// One warp per object compared with every object (big_list, counters->big of them).
__global__ void clean_big_kernel(DeblendPlan p, CleanPlan c, bool store) {
  const Team team = warp_team();
  for (int64_t k = first_warp(); k < p.counters->big; k += warp_stride())
    clean_big_job(team, p, c, static_cast<int32_t>(k), store);
}

__global__ void clean_resolve_kernel(DeblendPlan p, CleanPlan c) {
  p.counters->edges = c.edge_off[p.counters->objects];
  if (c.merging) sextractor_resolve(p, c);
  else clean_resolve(p, c);
}

IMFLOW_DEBLEND_KERNEL(survive_all_kernel, at_most(n, p.counters->objects), c.survives[k] = 1, DeblendPlan p,
                      CleanPlan c)
IMFLOW_DEBLEND_KERNEL(paint_kernel, n, paint_job(p, c, labels_out, detected, k), DeblendPlan p, CleanPlan c,
                      int32_t* labels_out, uint8_t* detected)
IMFLOW_DEBLEND_KERNEL(record_kernel, at_most(n, p.counters->objects), record_job(p, c, records, k), DeblendPlan p,
                      CleanPlan c, DeblendRecord* records)

__global__ void summary_kernel(DeblendPlan p, CleanPlan c, DeblendSummary* summary, int32_t* nlabels_out) {
  summary_job(p, c, summary, nlabels_out);
}

#undef IMFLOW_DEBLEND_KERNEL

int blocks(int64_t n, int threads = kThreads) { return ::imflow::cuda::detail::blocks_for(n, threads, 65535); }

}  // namespace

void launch_start(const DeblendPlan& p, const int32_t* nlabels_device, int32_t nlabels, cudaStream_t stream) {
  start_kernel<<<1, 1, 0, stream>>>(p, nlabels_device, nlabels);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_label_stats(const DeblendPlan& p, int32_t* iota, int64_t n, cudaStream_t stream) {
  label_stats_kernel<<<blocks(n), kThreads, 0, stream>>>(p, iota, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_segments(const DeblendPlan& p, int64_t n, cudaStream_t stream) {
  segment_kernel<<<blocks(n), kThreads, 0, stream>>>(p, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_pixel_keys(const DeblendPlan& p, uint32_t* keys, uint32_t sentinel, int64_t n, cudaStream_t stream) {
  pixel_key_kernel<<<blocks(n), kThreads, 0, stream>>>(p, keys, sentinel, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_census(const DeblendPlan& p, const double* threshold_device, cudaStream_t stream) {
  census_kernel<<<1, 1, 0, stream>>>(p, threshold_device);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_order_keys(const DeblendPlan& p, uint32_t* keys, int32_t* values, int64_t n, cudaStream_t stream) {
  order_key_kernel<<<blocks(n), kThreads, 0, stream>>>(p, keys, values, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_host_split_list(const DeblendPlan& p, int64_t n, cudaStream_t stream) {
  host_split_list_kernel<<<blocks(n), kThreads, 0, stream>>>(p, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_host_split_fetch(const DeblendPlan& p, const HostSplitFetch& f, cudaStream_t stream) {
  host_split_fetch_kernel<<<blocks(f.npix), kThreads, 0, stream>>>(p, f, f.npix);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_host_split_result(const DeblendPlan& p, const HostSplitResult& h, cudaStream_t stream) {
  host_split_result_kernel<<<blocks(h.npix), kThreads, 0, stream>>>(p, h, h.npix);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_tree(const DeblendPlan& p, const int32_t* order, int64_t n, cudaStream_t stream) {
  tree_kernel<<<blocks(n * 32, kTreeThreads), kTreeThreads, 0, stream>>>(tree_args(p), order, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_object_counts(const DeblendPlan& p, int64_t n, cudaStream_t stream) {
  object_count_kernel<<<blocks(n), kThreads, 0, stream>>>(p, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_object_total(const DeblendPlan& p, cudaStream_t stream) {
  object_total_kernel<<<1, 1, 0, stream>>>(p);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_objects(const DeblendPlan& p, int64_t n, cudaStream_t stream) {
  objects_kernel<<<blocks(n), kThreads, 0, stream>>>(p, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_models(const DeblendPlan& p, int64_t n, cudaStream_t stream) {
  object_warp_kernel<true><<<blocks(n * 32, kTreeThreads), kTreeThreads, 0, stream>>>(p, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_weights(const DeblendPlan& p, int64_t n, cudaStream_t stream) {
  weights_kernel<<<blocks(n), kThreads, 0, stream>>>(p, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_rand_stream(const DeblendPlan& p, cudaStream_t stream) {
  rand_stream_kernel<<<1, 1, 0, stream>>>(p);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_allocate(const DeblendPlan& p, int64_t n, cudaStream_t stream) {
  allocate_kernel<<<blocks(n), kThreads, 0, stream>>>(p, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_alloc_keys(const DeblendPlan& p, uint32_t* keys, int32_t* values, uint32_t sentinel, int64_t n,
                       cudaStream_t stream) {
  alloc_key_kernel<<<blocks(n), kThreads, 0, stream>>>(p, keys, values, sentinel, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_npix(const DeblendPlan& p, int64_t n, cudaStream_t stream) {
  npix_kernel<<<blocks(n), kThreads, 0, stream>>>(p, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_measure(const DeblendPlan& p, int64_t n, cudaStream_t stream) {
  object_warp_kernel<false><<<blocks(n * 32, kTreeThreads), kTreeThreads, 0, stream>>>(p, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_clean_cells(const DeblendPlan& p, const CleanPlan& c, int32_t* iota, int64_t n, cudaStream_t stream) {
  clean_cells_kernel<<<blocks(n), kThreads, 0, stream>>>(p, c, iota, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_clean_fill(const DeblendPlan& p, const CleanPlan& c, int64_t n, cudaStream_t stream) {
  clean_fill_kernel<<<blocks(n), kThreads, 0, stream>>>(p, c, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_clean_count(const DeblendPlan& p, const CleanPlan& c, int64_t n, cudaStream_t stream) {
  clean_count_kernel<<<blocks(n, 128), 128, 0, stream>>>(p, c, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
  clean_big_kernel<<<blocks(n * 32, 128), 128, 0, stream>>>(p, c, false);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_clean_store(const DeblendPlan& p, const CleanPlan& c, int64_t n, cudaStream_t stream) {
  clean_store_kernel<<<blocks(n, 128), 128, 0, stream>>>(p, c, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
  clean_big_kernel<<<blocks(n * 32, 128), 128, 0, stream>>>(p, c, true);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_clean_resolve(const DeblendPlan& p, const CleanPlan& c, cudaStream_t stream) {
  clean_resolve_kernel<<<1, 1, 0, stream>>>(p, c);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_survive_all(const DeblendPlan& p, const CleanPlan& c, int64_t n, cudaStream_t stream) {
  survive_all_kernel<<<blocks(n), kThreads, 0, stream>>>(p, c, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_paint(const DeblendPlan& p, const CleanPlan& c, int32_t* labels_out, uint8_t* detected, int64_t n,
                  cudaStream_t stream) {
  paint_kernel<<<blocks(n), kThreads, 0, stream>>>(p, c, labels_out, detected, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_records(const DeblendPlan& p, const CleanPlan& c, DeblendRecord* records, int64_t n, cudaStream_t stream) {
  record_kernel<<<blocks(n), kThreads, 0, stream>>>(p, c, records, n);
  IMFLOW_CUDA_CHECK_LAUNCH();
}
void launch_summary(const DeblendPlan& p, const CleanPlan& c, DeblendSummary* summary, int32_t* nlabels_out,
                    cudaStream_t stream) {
  summary_kernel<<<1, 1, 0, stream>>>(p, c, summary, nlabels_out);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda::deblend_detail
