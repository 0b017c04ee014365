// The seed pipeline on the GPU (background, segment, label, measure) vs the CPU kernels:
// masks, labels and catalogs, edge shapes, the catalog overflow path, measure's segment list and
// its overflow, context reuse and the real ISAAC crop and every real image under datasets/data;
// random inputs use fresh seeds; device auto with a CPU-only step; SEP's convolution through the
// pipeline on both devices.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gpu_test_helpers.hpp"
#include "imflow/engine.hpp"
#include "imflow/io/fits.hpp"
#include "test_helpers.hpp"

using namespace gpu_test;
namespace fs = std::filesystem;

TEST_CASE("GPU pipeline matches the CPU on random skies", "[gpu][pipeline]") {
  Slot slot;
  WorkItem item;
  const int64_t sizes[][2] = {{256, 256}, {217, 181}, {1000, 7}, {7, 1000}, {1, 1}, {1, 300}, {300, 1}, {1500, 1100}, {30000, 40}};
  uint32_t seed = fresh_seed("GPU pipeline on random skies");
  for (const auto& s : sizes) {
    fill_sky(item, s[0], s[1], seed++, static_cast<int>(1 + s[0] * s[1] / 2000));
    for (int c : {4, 8}) {
      INFO(s[0] << "x" << s[1] << " connectivity " << c << " seed " << seed - 1);
      check_pipeline(slot, item, 3.0, 100, 5.0, c);
      check_pipeline(slot, item, 3.0, 100, 1.0, c);    // many small sources
      check_pipeline(slot, item, 3.0, 100, 0.0, c);    // about half the pixels
      check_pipeline(slot, item, 3.0, 100, 20.0, c, true);
    }
  }
}

TEST_CASE("GPU pipeline on degenerate images", "[gpu][pipeline]") {
  Slot slot;
  WorkItem item;
  SECTION("constant") {
    make_pinned(item, 217, 181);
    std::fill(item.pixels.begin(), item.pixels.end(), 3.0f);
    for (int c : {4, 8}) check_pipeline(slot, item, 3.0, 100, 5.0, c);
    for (int c : {4, 8}) check_pipeline(slot, item, 3.0, 100, 0.5, c, true);  // threshold 0: one full source
    CHECK(*item.nlabels == 1);
  }
  SECTION("all NaN") {
    make_pinned(item, 64, 64);
    std::fill(item.pixels.begin(), item.pixels.end(), NAN);
    for (int c : {4, 8}) check_pipeline(slot, item, 3.0, 100, 5.0, c);
    CHECK(*item.nlabels == 0);
    CHECK(item.catalog->empty());
  }
}

TEST_CASE("GPU peak search for huge images gives the same catalog", "[gpu][measure]") {
  Slot slot;
  slot.gpu.force_wide_peak = true;
  WorkItem item;
  fill_sky(item, 301, 257, 5, 40);
  for (int c : {4, 8}) check_pipeline(slot, item, 3.0, 100, 1.0, c);
  // Ties: integer image, many equal maxima inside each source.
  make_pinned(item, 200, 150);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> v(0, 4);
  for (auto& p : item.pixels) p = static_cast<float>(v(rng));
  check_pipeline(slot, item, 3.0, 100, 0.1, 8);
  slot.gpu.force_wide_peak = false;
  check_pipeline(slot, item, 3.0, 100, 0.1, 8);
}

TEST_CASE("GPU catalog overflow falls back to the host and grows the capacity", "[gpu][measure]") {
  Slot slot;
  WorkItem item;
  fill_sky(item, 400, 300, 9, 60);
  imflow::cuda::set_catalog_capacity(slot.gpu, 4);
  SECTION("labels downloaded") { check_pipeline(slot, item, 3.0, 100, 1.0, 4); }
  SECTION("labels not downloaded: copied synchronously") {
    run_item(slot, item, [](GpuContext& gpu) {
      imflow::cuda::background(gpu, 3.0, 100);
      imflow::cuda::segment(gpu, 1.0, false);
      imflow::cuda::label(gpu, 8);
      imflow::cuda::measure(gpu);
    }, {});
    const auto view = item.pixels.view();
    const CpuResult cpu = cpu_pipeline(view, view, 3.0, 100, *item.threshold, 8);
    REQUIRE(cpu.nlabels > 4);
    check_catalog(*item.catalog, cpu.catalog);
  }
  CHECK(slot.gpu.catalog_capacity >= *item.nlabels);
  check_pipeline(slot, item, 3.0, 100, 1.0, 4);  // now on the device
}

// measure lists the sources' row segments (at most 8 pixels each) in room for n/8 + 4096 of them;
// a denser mask outgrows the list and the accumulation walks every pixel instead. Both give the
// CPU's catalog, sparse and dense, with runs longer than a segment and masks reaching the edges.
TEST_CASE("GPU measure sums listed segments, or every pixel once they outgrow the list", "[gpu][measure]") {
  Slot slot;
  WorkItem item;
  const uint32_t seed = fresh_seed("GPU measure segments");
  INFO("seed " << seed);
  fill_sky(item, 1031, 517, seed, 300);
  const int64_t capacity = 1031 * 517 / 8 + 4096;
  const auto listed = [&] {
    unsigned long long count = 0;
    REQUIRE(cudaMemcpy(&count, slot.gpu.measure_segments.data(), sizeof(count), cudaMemcpyDeviceToHost) == cudaSuccess);
    return static_cast<int64_t>(count);
  };
  for (int c : {4, 8}) {
    INFO("connectivity " << c);
    check_pipeline(slot, item, 3.0, 100, 3.0, c);
    CHECK(listed() > *item.nlabels);
    CHECK(listed() <= capacity);
    check_pipeline(slot, item, 3.0, 100, 0.0, c);  // about half the pixels, runs of ~2
    CHECK(listed() > capacity);
  }
}

TEST_CASE("one context serves items of different sizes in stream order", "[gpu][context]") {
  Slot slot;
  WorkItem a, b, c;
  fill_sky(a, 512, 384, 21, 30);
  fill_sky(b, 100, 77, 22, 5);
  fill_sky(c, 640, 480, 23, 50);
  for (int round = 0; round < 2; ++round) {
    check_pipeline(slot, a, 3.0, 100, 3.0, 8);
    check_pipeline(slot, b, 3.0, 100, 3.0, 4);
    check_pipeline(slot, c, 3.0, 100, 3.0, 8);
  }
  // Two items enqueued back to back on one stream before a single wait: the first is collected
  // from its own downloads only if collect happens before the second upload, so the engine keeps
  // one item per context; here we check the pinned mirrors are fully rewritten by the second.
  imflow::cuda::DownloadWants wants{true, true, false, false};
  auto steps = [](GpuContext& gpu) {
    imflow::cuda::background(gpu, 3.0, 100);
    imflow::cuda::segment(gpu, 3.0, false);
    imflow::cuda::label(gpu, 4);
    imflow::cuda::measure(gpu);
  };
  imflow::cuda::enqueue_upload(slot.gpu, a);
  steps(slot.gpu);
  imflow::cuda::enqueue_download(slot.gpu, wants);
  imflow::cuda::enqueue_upload(slot.gpu, b);
  steps(slot.gpu);
  imflow::cuda::enqueue_download(slot.gpu, wants);
  slot.stream.synchronize();
  WorkItem collected;
  make_pinned(collected, 1, 1);
  imflow::cuda::collect_results(slot.gpu, collected);
  const auto view = b.pixels.view();
  const CpuResult cpu = cpu_pipeline(view, view, 3.0, 100, *collected.threshold, 4);
  CHECK(collected.labels == cpu.labels);
  check_catalog(*collected.catalog, cpu.catalog);
}

TEST_CASE("GPU pipeline on the real ISAAC crop", "[gpu][pipeline][real]") {
  const std::filesystem::path path = std::filesystem::path(IMFLOW_SOURCE_DIR) / "datasets/samples/isaac_crop.fits";
  if (!std::filesystem::exists(path)) {
    WARN("skipped: " << path << " not present");
    return;
  }
  Slot slot;
  WorkItem item;
  item.pixels.set_allocator(imflow::cuda::pinned_allocator());
  imflow::read_fits_plane(path, 0, 0, item.pixels);
  for (int c : {4, 8}) check_pipeline(slot, item, 3.0, 100, 5.0, c);
  // The committed reference (tests/data/reference_samples.json): 6 iterations, 38 sources.
  check_pipeline(slot, item, 3.0, 100, 5.0, 4);
  CHECK(item.background->iterations == 6);
  CHECK(item.background->kept == 64411);
  CHECK(*item.nlabels == 38);
}

TEST_CASE("GPU pipeline on every real image of datasets/data", "[gpu][pipeline][real]") {
  // datasets/fetch.sh puts them there (gitignored); every image HDU and plane is one item.
  const std::filesystem::path root = std::filesystem::path(IMFLOW_SOURCE_DIR) / "datasets/data";
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"astro", "calib", "astro-fz"}) {
    if (!std::filesystem::is_directory(root / dir)) continue;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root / dir)) {
      const std::string name = e.path().filename().string();
      auto ends = [&](const std::string& s) { return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0; };
      if (e.is_regular_file() && (ends(".fits") || ends(".fits.fz") || ends(".fit"))) files.push_back(e.path());
    }
  }
  if (files.empty()) {
    WARN("skipped: no real images under " << root << " (run datasets/fetch.sh)");
    return;
  }
  std::sort(files.begin(), files.end());
  Slot slot;
  WorkItem item;
  item.pixels.set_allocator(imflow::cuda::pinned_allocator());
  int items = 0;
  for (const auto& file : files) {
    for (const auto& info : imflow::scan_fits(file)) {
      for (int64_t plane = 0; plane < info.planes(); ++plane) {
        INFO(file.filename().string() << " hdu " << info.hdu << " plane " << plane);
        imflow::read_fits_plane(file, info.hdu, plane, item.pixels);
        check_pipeline(slot, item, 3.0, 100, 5.0, 4);  // config/astro.yaml
        const int32_t sources = *item.nlabels;
        check_pipeline(slot, item, 3.0, 100, 5.0, 8);
        check_pipeline(slot, item, 3.0, 100, 5.0, 4, true);  // the lesson's data > 5 std
        std::printf("real %-40s hdu %d plane %3lld %5lldx%-5lld iterations %2d sources %d\n",
                    file.filename().string().c_str(), info.hdu, static_cast<long long>(plane),
                    static_cast<long long>(info.width()), static_cast<long long>(info.height()),
                    item.background->iterations, sources);
        ++items;
      }
    }
  }
  std::printf("real images: %d items in %zu files, CPU == GPU\n", items, files.size());
  CHECK(items > 0);
}

TEST_CASE("device auto and cuda run measure's photometry on the GPU", "[gpu][pipeline]") {
  test::TempDir dir("gpu_auto_photometry");
  const fs::path samples = fs::path(IMFLOW_SOURCE_DIR) / "datasets/samples";
  fs::create_directories(dir / "in");
  fs::copy(samples / "isaac_crop.fits", dir / "in" / "isaac_crop.fits");
  // Photometry ran on the CPU only before (auto fell back to it, cuda refused).
  const std::string steps = "steps: [background, segment, label, {measure: {apertures: [6]}}]\n";
  auto pipeline = test::pipeline_from("output: {formats: [csv]}\n" + steps);
  pipeline.input.dir = dir / "in";
  for (const std::string device : {"auto", "cuda"}) {
    pipeline.engine.device = device;
    pipeline.output.dir = dir / device;
    CHECK(imflow::run_pipeline(pipeline, {}).failed() == 0);
    const auto json = nlohmann::json::parse(std::ifstream(dir / device / "summary.json"));
    CHECK(json["device"] == "cuda");
  }
}

TEST_CASE("convolve with SEP's arithmetic runs on the GPU and gives the CPU's catalog", "[gpu][pipeline][convolve]") {
  test::TempDir dir("gpu_sep_convolve");
  const fs::path samples = fs::path(IMFLOW_SOURCE_DIR) / "datasets/samples";
  fs::create_directories(dir / "in");
  fs::copy(samples / "isaac_crop.fits", dir / "in" / "isaac_crop.fits");
  const std::string steps = "steps: [{convolve: {apply_to: detection, arithmetic: sep, size: 3, sigma: 1}}, "
                            "background, {segment: {nsigma: 3}}, label, measure]\n";
  auto pipeline = test::pipeline_from("output: {formats: [csv]}\n" + steps);
  pipeline.input.dir = dir / "in";
  for (const std::string device : {"cpu", "cuda"}) {
    pipeline.engine.device = device;
    pipeline.output.dir = dir / device;
    REQUIRE(imflow::run_pipeline(pipeline, {}).failed() == 0);
    const auto json = nlohmann::json::parse(std::ifstream(dir / device / "summary.json"));
    CHECK(json["device"] == device);
  }
  auto rows = [](const fs::path& csv) {  // npix, peak_x, peak_y, xmin, xmax, ymin, ymax of each row
    std::ifstream in(csv);
    std::vector<std::vector<std::string>> table;
    std::string line;
    std::getline(in, line);
    REQUIRE(line.starts_with("id,x,y,X_IMAGE,Y_IMAGE,ra,dec,flux,npix,peak,peak_x,peak_y,xmin,xmax,ymin,ymax,"));
    while (std::getline(in, line)) {
      std::vector<std::string> fields;
      for (size_t start = 0, comma = 0; comma != std::string::npos; start = comma + 1) {
        comma = line.find(',', start);
        fields.push_back(line.substr(start, comma == std::string::npos ? comma : comma - start));
      }
      table.push_back({fields[8], fields[10], fields[11], fields[12], fields[13], fields[14], fields[15]});
    }
    return table;
  };
  // The same segments (the filtered detection image is the CPU's bit for bit).
  const auto cpu = rows(dir / "cpu" / "isaac_crop.cat.csv"), gpu = rows(dir / "cuda" / "isaac_crop.cat.csv");
  CHECK(cpu.size() > 20);
  CHECK(gpu == cpu);
}
