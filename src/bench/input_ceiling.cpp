// The input ceiling: reading (and uploading) the inputs with no steps (input_ceiling.hpp).
#include "input_ceiling.hpp"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "bench/scaling.hpp"
#include "engine/item_source.hpp"
#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/io/input_format.hpp"

#ifdef IMFLOW_HAVE_CUDA
#include "cuda/cuda_check.hpp"
#include "cuda/resources.hpp"
#include "engine/gpu_graph.hpp"
#endif

namespace imflow::bench {

namespace {
constexpr int64_t kLargestItemBytes = int64_t{1} << 30;

// One thread's buffers: the host image (pinned on a GPU) and, on a GPU, its device copy and stream.
struct Lane {
  explicit Lane(bool gpu, int device) : device(device) {
#ifdef IMFLOW_HAVE_CUDA
    if (gpu) {
      cuda::DeviceGuard guard(device);
      pixels.set_allocator(cuda::pinned_allocator());
      stream = std::make_unique<cuda::Stream>();
    }
#else
    (void)gpu;
#endif
  }
  int device = -1;
  ImageBuffer pixels;
#ifdef IMFLOW_HAVE_CUDA
  cuda::DeviceBuffer<float> on_device;
  std::unique_ptr<cuda::Stream> stream;
#endif
};

// Read item `ref` into the lane (and copy it to its GPU); false when the read fails.
bool read_one(const ItemRef& ref, Lane& lane, bool gpu, const ReadLimits& base_limits, std::atomic<int64_t>& bytes) {
  if (!ref.error.empty()) return false;
  try {
    const InputFormat* format = input_format_for(ref.path);
    if (format == nullptr) return false;
    ReadLimits limits = base_limits;
    bool big_endian = false;
    if (gpu) limits.float32_swap_deferred = &big_endian;
    bytes += format->read(ref, lane.pixels, limits);
#ifdef IMFLOW_HAVE_CUDA
    if (gpu) {
      cuda::DeviceGuard guard(lane.device);
      const auto count = static_cast<size_t>(lane.pixels.size());
      lane.on_device.reserve(count);
      IMFLOW_CUDA_CHECK(cudaMemcpyAsync(lane.on_device.data(), lane.pixels.data(), count * sizeof(float),
                                        cudaMemcpyHostToDevice, lane.stream->get()));
      lane.stream->synchronize();
    }
#endif
    return true;
  } catch (const InputError&) {
    return false;
  }
}
}  // namespace

nlohmann::json measure_input_ceiling(const Pipeline& pipeline, int threads, int repeats) {
  const bool gpu = pipeline.engine.device == "cuda";
  nlohmann::json result = {{"what", gpu ? "read into pinned memory and copied to the GPU, no steps, no outputs"
                                        : "read and converted to float32, no steps, no outputs"},
                           {"device", pipeline.engine.device},
                           {"threads", threads}};
  const std::vector<std::filesystem::path> files = list_input_files(pipeline.input);
  if (files.empty()) throw InputError(pipeline.input.dir.string() + ": no input file matches the patterns (input.patterns)");
  ItemSource source(files, pipeline.input.dir);
  source.set_max_file_bytes(pipeline.input.max_file_bytes);
  std::vector<ItemRef> items;
  for (ItemRef ref; source.next(ref);) {
    if (ref.core.width * ref.core.height * static_cast<int64_t>(sizeof(float)) > kLargestItemBytes) {
      return {{"skipped", ref.path.string() + ": images above 1 GiB are read in tiles or strips"}};
    }
    items.push_back(std::move(ref));
  }
  std::vector<int> devices{-1};
#ifdef IMFLOW_HAVE_CUDA
  if (gpu) devices = chosen_devices(pipeline.engine);
#endif
  std::atomic<size_t> lanes_made{0};
  tbb::enumerable_thread_specific<std::unique_ptr<Lane>> lanes;
  ReadLimits limits;
  limits.max_pixels = pipeline.input.max_pixels;
  tbb::task_arena arena(std::max(threads, 1));
  std::vector<double> seconds;
  int64_t failed = 0, total_bytes = 0;
  for (int pass = 0; pass <= std::max(repeats, 1); ++pass) {  // pass 0: untimed (buffers, page cache)
    std::atomic<int64_t> bytes{0}, failures{0};
    const auto start = std::chrono::steady_clock::now();
    arena.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<size_t>(0, items.size(), 1),
          [&](const tbb::blocked_range<size_t>& range) {
            std::unique_ptr<Lane>& lane = lanes.local();
            if (!lane) lane = std::make_unique<Lane>(gpu, devices[lanes_made++ % devices.size()]);
            for (size_t i = range.begin(); i != range.end(); ++i) {
              if (!read_one(items[i], *lane, gpu, limits, bytes)) ++failures;
            }
          },
          tbb::simple_partitioner());
    });
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pass > 0) seconds.push_back(elapsed);
    failed = failures.load(), total_bytes = bytes.load();
  }
  const Spread time = spread(seconds);
  const auto count = static_cast<double>(items.size());
  result["items"] = items.size();
  result["failed"] = failed;
  result["megabytes"] = static_cast<double>(total_bytes) * 1e-6;
  result["seconds"] = {{"median", time.median}, {"min", time.min}, {"max", time.max}};
  result["images_per_second"] = {{"median", count / time.median}, {"min", count / time.max}, {"max", count / time.min}};
  result["megabytes_per_second"] = static_cast<double>(total_bytes) * 1e-6 / time.median;
  return result;
}

}  // namespace imflow::bench
