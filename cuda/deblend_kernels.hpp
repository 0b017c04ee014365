// Launchers of the deblending jobs (cuda/deblend_jobs.hpp, cuda/deblend_clean.hpp), one kernel
// each, for cuda/deblend.cu. `n` is the host's bound on the indices; jobs over segments or
// objects stop at the device's count (counters->segments, counters->objects).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/deblend_clean.hpp"
#include "cuda/deblend_host_jobs.hpp"

namespace imflow::cuda::deblend_detail {

// counters->nlabels (from the device or the host), checked against the per-label arrays.
void launch_start(const DeblendPlan& p, const int32_t* nlabels_device, int32_t nlabels, cudaStream_t stream);
// Per pixel: iota[i] = i and the label statistics.
void launch_label_stats(const DeblendPlan& p, int32_t* iota, int64_t n, cudaStream_t stream);
void launch_segments(const DeblendPlan& p, int64_t n, cudaStream_t stream);
void launch_pixel_keys(const DeblendPlan& p, uint32_t* keys, uint32_t sentinel, int64_t n, cudaStream_t stream);
// counters->kept and arena_words from the scans; the device threshold when there is one.
void launch_census(const DeblendPlan& p, const double* threshold_device, cudaStream_t stream);
// The segments the host splits (p.host_jobs, counters->host_splits), over n >= segments.
void launch_host_split_list(const DeblendPlan& p, int64_t n, cudaStream_t stream);
// One host split's pixels and values into mapped host memory, and its results into p's arrays
// (cuda/deblend_host_jobs.hpp).
void launch_host_split_fetch(const DeblendPlan& p, const HostSplitFetch& f, cudaStream_t stream);
void launch_host_split_result(const DeblendPlan& p, const HostSplitResult& h, cudaStream_t stream);
// Keys and values of the segments' launch order (the host's segments, then the largest).
void launch_order_keys(const DeblendPlan& p, uint32_t* keys, int32_t* values, int64_t n, cudaStream_t stream);
void launch_tree(const DeblendPlan& p, const int32_t* order, int64_t n, cudaStream_t stream);
void launch_object_counts(const DeblendPlan& p, int64_t n, cudaStream_t stream);
// counters->objects from the scan of the object counts (segments + 1 entries).
void launch_object_total(const DeblendPlan& p, cudaStream_t stream);
void launch_objects(const DeblendPlan& p, int64_t n, cudaStream_t stream);
void launch_models(const DeblendPlan& p, int64_t n, cudaStream_t stream);
void launch_weights(const DeblendPlan& p, int64_t n, cudaStream_t stream);
void launch_allocate(const DeblendPlan& p, int64_t n, cudaStream_t stream);
// SExtractor's draws (mode 2): the image's rand() stream, one thread.
void launch_rand_stream(const DeblendPlan& p, cudaStream_t stream);
void launch_alloc_keys(const DeblendPlan& p, uint32_t* keys, int32_t* values, uint32_t sentinel, int64_t n,
                       cudaStream_t stream);
void launch_npix(const DeblendPlan& p, int64_t n, cudaStream_t stream);
void launch_measure(const DeblendPlan& p, int64_t n, cudaStream_t stream);
// CLEAN: cells (and iota over all n objects, big_flag 0 past the count), cell lists, pair
// counts, counters->edges, stored pairs, SEP's loop (c.merging: SExtractor's walk); or every
// object surviving.
void launch_clean_cells(const DeblendPlan& p, const CleanPlan& c, int32_t* iota, int64_t n, cudaStream_t stream);
void launch_clean_fill(const DeblendPlan& p, const CleanPlan& c, int64_t n, cudaStream_t stream);
void launch_clean_count(const DeblendPlan& p, const CleanPlan& c, int64_t n, cudaStream_t stream);
void launch_clean_store(const DeblendPlan& p, const CleanPlan& c, int64_t n, cudaStream_t stream);
void launch_clean_resolve(const DeblendPlan& p, const CleanPlan& c, cudaStream_t stream);
void launch_survive_all(const DeblendPlan& p, const CleanPlan& c, int64_t n, cudaStream_t stream);
void launch_paint(const DeblendPlan& p, const CleanPlan& c, int32_t* labels_out, uint8_t* detected, int64_t n,
                  cudaStream_t stream);
void launch_records(const DeblendPlan& p, const CleanPlan& c, DeblendRecord* records, int64_t n, cudaStream_t stream);
void launch_summary(const DeblendPlan& p, const CleanPlan& c, DeblendSummary* summary, int32_t* nlabels_out,
                    cudaStream_t stream);

}  // namespace imflow::cuda::deblend_detail
