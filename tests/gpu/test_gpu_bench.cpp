// Timings of each GPU step on a 4096x4096 sky (hidden: run with `imflow_gpu_tests "[bench]"`).
#include <chrono>
#include <cstdio>

#include "gpu_test_helpers.hpp"

using namespace gpu_test;

TEST_CASE("GPU step timings on 4096x4096", "[.][bench]") {
  Slot slot;
  WorkItem item;
  fill_sky(item, 4096, 4096, 77, 2000);
  imflow::ImageBuffer gauss;
  imflow::kernels::gaussian_kernel(5, 1.5, gauss);
  imflow::cuda::Event start(true), stop(true);
  auto time = [&](const char* name, const std::function<void(GpuContext&)>& f) {
    for (int rep = 0; rep < 3; ++rep) {  // first run warms up
      start.record(slot.gpu.stream);
      f(slot.gpu);
      stop.record(slot.gpu.stream);
      stop.synchronize();
    }
    std::printf("%-28s %8.3f ms\n", name, imflow::cuda::Event::elapsed_ms(start, stop));
  };
  imflow::cuda::enqueue_upload(slot.gpu, item);
  time("upload (pinned, 64 MiB)", [&](GpuContext& gpu) { imflow::cuda::enqueue_upload(gpu, item); });
  int iterations = 0;
  time("background", [&](GpuContext& gpu) { imflow::cuda::background(gpu, 3.0, 100); });
  time("segment", [&](GpuContext& gpu) { imflow::cuda::segment(gpu, 3.0, false); });
  time("label 8", [&](GpuContext& gpu) { imflow::cuda::label(gpu, 8); });
  time("measure", [&](GpuContext& gpu) { imflow::cuda::measure(gpu); });
  time("download (no maps)", [&](GpuContext& gpu) { imflow::cuda::enqueue_download(gpu, {}); });
  imflow::cuda::collect_results(slot.gpu, item);
  iterations = item.background->iterations;
  std::printf("iterations %d, sources %d\n", iterations, *item.nlabels);
  time("convolve 5x5 same", [&](GpuContext& gpu) {
    imflow::cuda::convolve(gpu, gauss.data(), 5, 5, imflow::kernels::ConvolveMode::same, true);
  });
  const auto t0 = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 10; ++rep)
    run_item(slot, item, [](GpuContext& gpu) {
      imflow::cuda::background(gpu, 3.0, 100);
      imflow::cuda::segment(gpu, 3.0, false);
      imflow::cuda::label(gpu, 8);
      imflow::cuda::measure(gpu);
    }, {});
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 10;
  std::printf("whole item, upload to collect: %.3f ms\n", ms);
}
