// Timings of each GPU step on a 4096x4096 sky and on a 2048x2048 real-like image (hidden: run
// with `imflow_gpu_tests "[bench]"`).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "gpu_test_helpers.hpp"
#include "imflow/io/fits.hpp"

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

// The astronomy timings on a 2048x2048 float32 image (real-like: the ISAAC frame tiled 2x2 when
// datasets/data/astro holds it, else a synthetic sky): GPU time of background+segment+label+
// measure, and of the lesson's 15x15 Gaussian, separable vs general. JSON to $IMFLOW_BENCH_JSON.
TEST_CASE("GPU astronomy timings on 2048x2048", "[.][bench][astro2048]") {
  constexpr int64_t N = 2048;
  Slot slot;
  WorkItem item;
  const std::filesystem::path isaac =
      std::filesystem::path(IMFLOW_SOURCE_DIR) / "datasets/data/astro/ISAAC.2006-04-13T06-32-38.944.fits";
  std::string source = "synthetic sky";
  if (std::filesystem::exists(isaac)) {
    imflow::ImageBuffer frame;
    imflow::read_fits_plane(isaac, 0, 0, frame);
    make_pinned(item, N, N);
    for (int64_t y = 0; y < N; ++y)
      for (int64_t x = 0; x < N; ++x) item.pixels.view()(x, y) = frame.view()(x % frame.width(), y % frame.height());
    source = "ISAAC tiled 2x2";
  } else {
    fill_sky(item, N, N, 5, 400);
  }
  imflow::cuda::Event start(true), stop(true);
  constexpr int reps = 50;
  auto time = [&](const std::function<void(GpuContext&)>& f) {
    f(slot.gpu);  // warm-up
    start.record(slot.gpu.stream);
    for (int r = 0; r < reps; ++r) f(slot.gpu);
    stop.record(slot.gpu.stream);
    stop.synchronize();
    return imflow::cuda::Event::elapsed_ms(start, stop) * 1000.0 / reps;  // microseconds
  };
  imflow::cuda::enqueue_upload(slot.gpu, item);
  auto chain = [](GpuContext& gpu) {
    imflow::cuda::background(gpu, 3.0, 100);
    imflow::cuda::segment(gpu, 5.0, false);
    imflow::cuda::label(gpu, 4);
    imflow::cuda::measure(gpu);
  };
  const double upload = time([&](GpuContext& gpu) { imflow::cuda::enqueue_upload(gpu, item); });
  const double background = time([](GpuContext& gpu) { imflow::cuda::background(gpu, 3.0, 100); });
  const double segment = time([](GpuContext& gpu) { imflow::cuda::segment(gpu, 5.0, false); });
  const double label = time([](GpuContext& gpu) { imflow::cuda::label(gpu, 4); });
  const double measure = time([](GpuContext& gpu) { imflow::cuda::measure(gpu); });
  const double pipeline = time(chain);
  const double download = time([](GpuContext& gpu) { imflow::cuda::enqueue_download(gpu, {}); });
  imflow::cuda::collect_results(slot.gpu, item);
  const int iterations = item.background->iterations, sources = *item.nlabels;

  imflow::ImageBuffer lesson, gauss5;
  imflow::kernels::lesson_gaussian_kernel(lesson);
  imflow::kernels::gaussian_kernel(5, 1.5, gauss5);
  using imflow::kernels::ConvolveMode;
  auto conv = [&](const imflow::ImageBuffer& k, ConvolveMode mode, bool separable) {
    imflow::cuda::enqueue_upload(slot.gpu, item);
    const bool to_detection = mode == ConvolveMode::same;  // full grows the image: time one at a time
    if (to_detection)
      return time([&](GpuContext& gpu) {
        imflow::cuda::convolve(gpu, k.data(), int(k.width()), int(k.height()), mode, true, separable);
      });
    double total = 0;
    for (int r = 0; r < 20; ++r) {
      imflow::cuda::enqueue_upload(slot.gpu, item);
      start.record(slot.gpu.stream);
      imflow::cuda::convolve(slot.gpu, k.data(), int(k.width()), int(k.height()), mode, false, separable);
      stop.record(slot.gpu.stream);
      stop.synchronize();
      if (r > 0) total += imflow::cuda::Event::elapsed_ms(start, stop) * 1000.0;
    }
    return total / 19;
  };
  const double c15_sep = conv(lesson, ConvolveMode::same, true);
  const double c15_gen = conv(lesson, ConvolveMode::same, false);
  const double c15_full_sep = conv(lesson, ConvolveMode::full, true);
  const double c15_full_gen = conv(lesson, ConvolveMode::full, false);
  const double c5_sep = conv(gauss5, ConvolveMode::same, true);
  const double c5_gen = conv(gauss5, ConvolveMode::same, false);
  char json[2048];
  std::snprintf(json, sizeof json,
                "{\n  \"image\": \"%s\", \"width\": %lld, \"height\": %lld, \"reps\": %d,\n"
                "  \"iterations\": %d, \"sources\": %d,\n  \"us\": {\"upload_h2d\": %.2f, \"background\": %.2f, "
                "\"segment\": %.2f, \"label\": %.2f, \"measure\": %.2f,\n    \"background_segment_label_measure\": %.2f, "
                "\"download_d2h_catalog\": %.2f,\n    \"convolve_15x15_same_separable\": %.2f, "
                "\"convolve_15x15_same_general\": %.2f,\n    \"convolve_15x15_full_separable\": %.2f, "
                "\"convolve_15x15_full_general\": %.2f,\n    \"convolve_5x5_same_separable\": %.2f, "
                "\"convolve_5x5_same_general\": %.2f},\n  \"targets_us\": {\"background_segment_label_measure\": 1000, "
                "\"convolve_15x15\": 50}\n}\n",
                source.c_str(), static_cast<long long>(N), static_cast<long long>(N), reps, iterations, sources, upload,
                background, segment, label, measure, pipeline, download, c15_sep, c15_gen, c15_full_sep, c15_full_gen,
                c5_sep, c5_gen);
  std::fputs(json, stdout);
  if (const char* path = std::getenv("IMFLOW_BENCH_JSON")) {
    if (FILE* f = std::fopen(path, "w")) {
      std::fputs(json, f);
      std::fclose(f);
    }
  }
}
