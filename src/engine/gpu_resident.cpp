// GPU-resident images: the device-memory limit and the parallel strip upload (gpu_resident.hpp).
#include "gpu_resident.hpp"

#include <tbb/blocked_range.h>
#include <tbb/concurrent_queue.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <future>
#include <limits>
#include <memory>

#include "cuda/cuda_check.hpp"
#include "cuda/resources.hpp"
#include "imflow/huge_pages.hpp"
#include "imflow/io/fits.hpp"
#include "input_limits.hpp"

namespace imflow {

namespace {
constexpr double kFreeMemoryShare = 0.8;

// A pinned buffer for one strip, the stream its copy goes through and the event that marks the
// copy's end: the buffer is read into again only after it.
struct StripStaging {
  ImageBuffer pixels{cuda::pinned_allocator()};
  cuda::Stream stream;
  cuda::Event copied;
};
}  // namespace

int64_t expected_catalog_rows(int64_t pixels) {
  return static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(pixels / 1024, 1))));
}

Catalog catalog_rows_ahead(int64_t rows) {
  Catalog catalog;
  reserve_huge_pages(catalog, static_cast<size_t>(rows));
  catalog.resize(static_cast<size_t>(rows));
  return catalog;
}

int64_t resident_pixel_limit(const std::vector<int>& devices, int64_t bytes_per_pixel) {
  int64_t limit = std::numeric_limits<int32_t>::max() - 1;
  for (int device : devices) {
    cuda::DeviceGuard guard(device);
    size_t free_bytes = 0, total_bytes = 0;
    IMFLOW_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    limit = std::min(limit, static_cast<int64_t>(kFreeMemoryShare * static_cast<double>(free_bytes)) / bytes_per_pixel);
  }
  return limit;
}

void upload_resident_plane(RunContext& run, GpuContext& gpu, WorkItem& item) {
  const ItemRef& ref = item.ref;
  check_input_file(ref.path, run.pipeline.input.max_file_bytes, false);  // it may have changed since the scan
  const int64_t width = ref.core.width, height = ref.core.height, rows = ref.resident_rows;
  const int64_t strips = (height + rows - 1) / rows;
  // Two staging buffers per thread that reads: one is read into while the other's copy runs.
  const int64_t readers = std::min<int64_t>(strips, 2 * int64_t{tbb::this_task_arena::max_concurrency()});
  std::vector<std::unique_ptr<StripStaging>> staging;
  tbb::concurrent_bounded_queue<StripStaging*> idle;
  {
    StageTimer timer(run, item, "gpu buffers", worker_track("resident"));
    cuda::prepare_item(gpu, width, height);
    cuda::DeviceGuard guard(gpu.device);
    for (int64_t r = 0; r < readers; ++r) {
      staging.push_back(std::make_unique<StripStaging>());
      idle.push(staging.back().get());
    }
  }
  // No staging buffer goes (or goes back to the pinned cache) while a copy from it may run, also
  // when a read fails.
  struct DrainCopies {
    const std::vector<std::unique_ptr<StripStaging>>& staging;
    ~DrainCopies() {
      for (const auto& buffer : staging) IMFLOW_CUDA_LOG(cudaStreamSynchronize(buffer->stream.get()));
    }
  } drain_copies{staging};
  ReadLimits limits;
  limits.max_pixels = run.pipeline.input.max_pixels;
  std::atomic<int64_t> beyond_float32{0};  // out-of-range pixels over the strips, warned about once
  limits.out_of_range_pixels = &beyond_float32;
  std::atomic<int64_t> bytes{0}, busy_ns{0};
  // Meanwhile, room for a dense field's catalog (a source per 1,024 pixels), so it is rarely
  // measured twice (cuda::remeasure_if_overflowed).
  auto catalog_room = std::async(std::launch::async, [&gpu, catalog_rows = expected_catalog_rows(width * height)] {
    if (gpu.catalog_capacity < catalog_rows) cuda::set_catalog_capacity(gpu, catalog_rows);
  });
  // Isolated: a thread waiting inside parallel_for must not pick up another graph task (e.g. the
  // next resident image, which would wait for this device).
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, strips, 1),
        [&](const tbb::blocked_range<int64_t>& range) {
          cuda::DeviceGuard guard(gpu.device);
          for (int64_t s = range.begin(); s != range.end(); ++s) {
            StripStaging* buffer = nullptr;
            idle.pop(buffer);
            struct GiveBack {
              tbb::concurrent_bounded_queue<StripStaging*>& queue;
              StripStaging* buffer;
              ~GiveBack() { queue.push(buffer); }
            } give_back{idle, buffer};
            const auto start = Trace::Clock::now();
            const double cpu_start_us = run.trace != nullptr ? Trace::thread_cpu_us() : 0.0;
            buffer->copied.synchronize();  // the buffer's previous strip is on the device
            const TileRect strip{0, s * rows, width, std::min(rows, height - s * rows)};
            bytes += read_fits_region(ref.path, ref.hdu, ref.plane, strip, buffer->pixels, limits);
            IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.image.data() + strip.y * width, buffer->pixels.data(),
                                              static_cast<size_t>(strip.size()) * sizeof(float), cudaMemcpyHostToDevice,
                                              buffer->stream.get()));
            buffer->copied.record(buffer->stream.get());
            const auto end = Trace::Clock::now();
            busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
            if (run.trace != nullptr) {
              run.trace->add(worker_track("read"), "read strip", run.trace->to_us(start),
                             std::chrono::duration<double, std::micro>(end - start).count(),
                             Trace::with_cpu_us("{\"item\":" + std::to_string(ref.index) + ",\"strip\":" +
                                                    std::to_string(s) + ",\"strips\":" + std::to_string(strips) + "}",
                                                cpu_start_us));
            }
          }
        },
        tbb::simple_partitioner());
  });
  for (const auto& buffer : staging) buffer->stream.synchronize();  // the last strips' copies, their errors
  if (beyond_float32 > 0) warn_beyond_float32(ref.path, ref.hdu, ref.plane, beyond_float32);
  catalog_room.get();
  item.input_bytes = bytes.load();
  item.times.push_back({"read", static_cast<double>(busy_ns.load()) * 1e-9});
}

}  // namespace imflow
