// Deblending on the device: the twin of kernels::deblend_sources (SEP's multi-threshold split,
// allocation and CLEAN), equal to it pixel for pixel and record for record. The segments are
// deblended in parallel, one warp each (the largest ones' trees by host threads meanwhile); the
// allocation runs one thread per pixel (SEP's rand_r stream cut by jumping ahead to each pixel's
// draw) and CLEAN one thread per object.
// How it is organised: cuda/deblend_jobs.hpp; the arithmetic: cuda/deblend_sep.hpp.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "imflow/kernels/deblend.hpp"

namespace imflow::cuda {

// What the device deblends; all pointers are device memory laid out width x height (row-major).
struct DeblendDeviceInput {
  int64_t width = 0, height = 0;
  const float* detection = nullptr;      // SEP's detection values, background subtracted
  const float* measurement = nullptr;    // the unfiltered values (nullptr: detection)
  const float* threshold_map = nullptr;  // the threshold per pixel, or nullptr:
  float threshold = 0.0f;                //   this one value,
  const double* threshold_device = nullptr;  // or, when set, float(*threshold_device) (e.g. &results->threshold)
  const int32_t* labels = nullptr;       // segments 1..n, 8-connected (kernels::label_components)
  // n: *nlabels_device when set (e.g. &results->nlabels after cuda::label), else nlabels.
  // With nlabels_device, nlabels bounds n (0: (width * height + 1) / 2 + 1, any label map's).
  const int32_t* nlabels_device = nullptr;
  int32_t nlabels = 0;
  // The detection's threshold mask (segment's; may be nullptr): the pixels of the objects CLEAN
  // removes are marked there, 0 or 2 (kernels::DeblendInput::detected).
  uint8_t* detected = nullptr;
};

// One object of the output as the device writes it (kernels::DeblendObject's fields, plain data
// for mapped pinned memory).
struct DeblendRecord {
  double x, y;
  long long npix;
  int32_t segment;
  float thresh, flux;
  int32_t blended;
  int32_t truncated;
  int32_t singular;
  int32_t merged;  // clean_style sextractor: other objects merged into it (kernels::DeblendObject::merged)
};

// Segments of at least this many pixels (with a compact box) are split on the host by default:
// one lane of a warp builds a segment's tree (cuda/deblend_host_jobs.hpp).
constexpr int32_t kHostSplitMinPixels = 4096;

// One slot's deblending buffers (device memory and mapped pinned memory for the results): they
// only grow from call to call. Not thread-safe; one call at a time per workspace and stream.
struct DeblendBuffers;
class DeblendWorkspace {
 public:
  DeblendWorkspace();
  ~DeblendWorkspace();
  DeblendWorkspace(DeblendWorkspace&&) noexcept;
  DeblendWorkspace& operator=(DeblendWorkspace&&) noexcept;
  DeblendWorkspace(const DeblendWorkspace&) = delete;
  DeblendWorkspace& operator=(const DeblendWorkspace&) = delete;

  // After the stream has completed the last deblend call: its result, objects in SEP's order
  // (objects[label - 1]), as kernels::deblend_sources returns it. Throws std::invalid_argument
  // for a label outside 1..n or one that is not 8-connected (as the CPU kernel does), and
  // std::logic_error if the device found its own state inconsistent.
  kernels::DeblendResult result() const;
  // The same, without the object records.
  int32_t objects() const;
  // The records as the device sees them (mapped pinned memory; record label - 1 of each object),
  // valid in stream order after the last deblend call: for kernels that follow it (cuda::measure).
  const DeblendRecord* device_records() const;

  // Segments of at least min_pixels pixels are split on the host (0: every segment on the device).
  void set_host_split_min_pixels(int32_t min_pixels);
  // The segments the last call split on the host.
  int32_t host_splits() const;

  DeblendBuffers& buffers() { return *buffers_; }  // for cuda::deblend (cuda/deblend_buffers.hpp)

 private:
  std::unique_ptr<DeblendBuffers> buffers_;
};

// Enqueue the deblending of `input` on `stream`: the new label map goes to labels_out (device,
// width x height, not input.labels): objects 1..m in SEP's catalog order, 0 elsewhere; m goes to
// *nlabels_out_device when it is not null (e.g. &results->nlabels, for cuda::measure). The records
// and counts: workspace.result() once the stream has completed.
//
// One synchronization: after the census of the segments (which labels SEP keeps, their pixels
// and working areas), the host waits for the stream to size the buffers of the rest exactly;
// everything after it is enqueued without waiting, except when segments are split on the host
// (set_host_split_min_pixels): the copy of their pixels is waited for, and their trees are built
// while the device builds the others. Device memory: ~28 bytes per image pixel (the sorts, the
// per-label census for the default bound), and per pixel of a kept segment ~80 bytes of working
// area (~190 with minarea 1 or 2; plus 48 bytes per column of the segment's box) and ~90 bytes
// of per-pixel and per-object arrays. Host memory per pixel of a segment split on the host:
// ~76 bytes while it is split (plus 8 per pixel of its box, 12 with a threshold map), and
// pinned copies that only grow (~28 bytes, 32 with a threshold map). Throws std::invalid_argument on bad parameters (as
// kernels::deblend_sources) or a label outside 1..n, std::length_error for images of 2^31
// pixels or more, CudaError on CUDA failures.
void deblend(const DeblendDeviceInput& input, const kernels::DeblendParams& params, int32_t* labels_out,
             int32_t* nlabels_out_device, cudaStream_t stream, DeblendWorkspace& workspace);

}  // namespace imflow::cuda
