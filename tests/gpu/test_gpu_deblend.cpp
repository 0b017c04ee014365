// cuda::deblend against kernels::deblend_sources (SEP's deblending and CLEAN, and SExtractor's
// merging CLEAN): identical label
// maps, object records and counts on the committed sample images, crowded synthetic fields
// (pairs 2-8 px apart, flux ratios 1 to 100, a varying threshold, a filtered detection image
// with the unfiltered values beside it), a segment of more than 10^6 pixels (split on the host,
// then by the device's tree kernel), every compact segment split on the host beside a thin trail
// split on the device, a segment of more than 1000 objects, the degenerate parameters, bad label
// maps, and one workspace reused across sizes. Each case prints one line (counts, CPU and GPU times) and,
// on a mismatch, the first differing pixel and object.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <stdexcept>

#include "deblend_check.hpp"
#include "gpu_test_helpers.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/kernels/background.hpp"

using namespace deblend_test;
namespace fs = std::filesystem;

namespace {

std::vector<DeblendParams> parameter_sets() {
  std::vector<DeblendParams> sets(7);
  sets[1].clean = false;
  sets[2].allocation = DeblendAllocation::most_probable;
  sets[3].nthresh = 64;
  sets[3].mincont = 1e-4;
  sets[3].clean_param = 2.0;
  sets[4].minarea = 1;
  sets[5].clean_style = DeblendCleanStyle::sextractor;  // SExtractor's CLEAN, merging
  sets[6].clean_style = DeblendCleanStyle::sextractor;  // and SExtractor's draws: source-extractor's objects
  sets[6].allocation = DeblendAllocation::sextractor_random;
  return sets;
}

// A sample image as SEP would see it: minus the clipped median, threshold 1.5 sigma (scalar, or a
// map infinite on the NaN pixels, which are 0 in the data).
Field sample_field(const fs::path& path, bool threshold_map) {
  imflow::ImageBuffer image;
  imflow::read_fits_plane(path, 0, 0, image);
  std::vector<float> work;
  const auto stats = imflow::kernels::kappa_sigma_clip(image.view(), 3.0, 100, work);
  Field f;
  f.w = image.width();
  f.h = image.height();
  f.image.resize(static_cast<size_t>(f.w * f.h));
  f.threshold = static_cast<float>(1.5 * stats.std);
  if (threshold_map) f.threshold_map.resize(f.image.size());
  for (size_t i = 0; i < f.image.size(); ++i) {
    const float v = image.data()[i];
    const bool valid = std::isfinite(v);
    f.image[i] = (valid ? v : 0.0f) - static_cast<float>(stats.median);
    if (threshold_map) f.threshold_map[i] = valid ? f.threshold : std::numeric_limits<float>::infinity();
  }
  return f;
}

// check() with the default host splits (at least one segment split on the host), then with the
// device's tree kernel alone; the workspace is left at the default.
void check_host_and_device(const std::string& name, const Field& f, const DeblendParams& params,
                           imflow::cuda::DeblendWorkspace& workspace, imflow::cuda::Stream& stream) {
  check(name.c_str(), f, params, workspace, stream);
  CHECK(workspace.host_splits() >= 1);
  workspace.set_host_split_min_pixels(0);
  check((name + ", device").c_str(), f, params, workspace, stream);
  CHECK(workspace.host_splits() == 0);
  workspace.set_host_split_min_pixels(imflow::cuda::kHostSplitMinPixels);
}

}  // namespace

TEST_CASE("GPU deblending equals the CPU kernel on the sample images", "[gpu][deblend][real]") {
  imflow::cuda::Stream stream;
  imflow::cuda::DeblendWorkspace workspace;
  const fs::path samples = fs::path(IMFLOW_SOURCE_DIR) / "datasets/samples";
  int images = 0;
  for (const char* name : {"isaac_crop.fits", "dss_crop.fits"}) {
    if (!fs::exists(samples / name)) continue;
    for (const bool map : {false, true}) {
      const Field f = sample_field(samples / name, map);
      for (const DeblendParams& params : parameter_sets())
        check((std::string(name) + (map ? " map" : "")).c_str(), f, params, workspace, stream);
    }
    ++images;
  }
  if (images == 0) WARN("skipped: no sample images under " << samples);
}

TEST_CASE("GPU deblending on crowded fields: close pairs, flux ratios, a threshold map", "[gpu][deblend]") {
  imflow::cuda::Stream stream;
  imflow::cuda::DeblendWorkspace workspace;
  const uint32_t seed = gpu_test::fresh_seed("deblend crowded fields");
  for (int t = 0; t < 8; ++t) {
    INFO("seed " << seed << " field " << t);
    const Field f = stars(seed + static_cast<uint32_t>(t), 200 + 37 * (t % 5), 150 + 23 * (t % 7), 60 + 40 * (t % 4),
                          t % 4 != 3, t % 3 == 0);
    const auto sets = parameter_sets();
    for (size_t v = 0; v < sets.size(); ++v) {
      Variant variant;
      variant.nlabels_on_device = (t + v) % 2 == 1;
      variant.threshold_on_device = f.threshold_map.empty() && (t + v) % 3 == 1;
      check(("crowded " + std::to_string(t) + " set " + std::to_string(v)).c_str(), f, sets[v], workspace, stream, variant);
    }
  }
}

TEST_CASE("GPU deblending of a filtered detection image with the unfiltered values", "[gpu][deblend]") {
  imflow::cuda::Stream stream;
  imflow::cuda::DeblendWorkspace workspace;
  for (uint32_t seed = 31; seed < 34; ++seed) {
    const Field f = filtered(stars(seed, 260, 200, 120, true, seed == 32));
    const auto sets = parameter_sets();
    for (size_t v = 0; v < sets.size(); ++v)
      check(("filtered " + std::to_string(seed) + " set " + std::to_string(v)).c_str(), f, sets[v], workspace, stream);
  }
}

TEST_CASE("GPU deblending of a segment of more than 10^6 pixels", "[gpu][deblend][large]") {
  imflow::cuda::Stream stream;
  imflow::cuda::DeblendWorkspace workspace;
  const Field f = galaxy(1300, 1300, 9);
  int32_t nlabels = 0;
  const auto labels = segments(f, nlabels);
  std::map<int32_t, int64_t> sizes;
  for (const int32_t l : labels) ++sizes[l];
  int64_t largest = 0;
  for (const auto& [label, size] : sizes)
    if (label != 0) largest = std::max(largest, size);
  std::printf("deblend: largest segment %lld pixels\n", static_cast<long long>(largest));
  REQUIRE(largest >= 1000000);
  DeblendParams params;
  check("galaxy", f, params, workspace, stream);
  params.clean = false;
  check_host_and_device("galaxy, no CLEAN", f, params, workspace, stream);
}

TEST_CASE("GPU deblending with the segments split on the host", "[gpu][deblend]") {
  imflow::cuda::Stream stream;
  imflow::cuda::DeblendWorkspace workspace;
  workspace.set_host_split_min_pixels(1);  // every segment with a compact box
  const uint32_t seed = gpu_test::fresh_seed("deblend host splits");
  const auto sets = parameter_sets();
  for (int t = 0; t < 4; ++t) {
    INFO("seed " << seed << " field " << t);
    Field f = stars(seed + static_cast<uint32_t>(t), 220 + 41 * t, 180 + 29 * t, 80 + 30 * t, true, t % 2 == 1);
    if (t >= 2) f = filtered(f);
    // A thin diagonal trail, 10 pixels clear of any star: its box holds more than 16 pixels per
    // pixel, so the device splits it.
    for (int64_t y = 0; y < f.h; ++y)
      for (int64_t x = std::max<int64_t>(0, y - 10); x <= std::min(f.w - 1, y + 10); ++x)
        f.image[static_cast<size_t>(y * f.w + x)] = x == y ? 400.0f : 0.0f;
    // The segments of 5 pixels or more, and those with a compact box (cuda/deblend_host_jobs.hpp).
    int32_t nlabels = 0;
    const std::vector<int32_t> labels = segments(f, nlabels);
    struct Box { int64_t n = 0, x0 = INT64_MAX, x1 = -1, y0 = INT64_MAX, y1 = -1; };
    std::map<int32_t, Box> boxes;
    for (size_t i = 0; i < labels.size(); ++i) {
      if (labels[i] == 0) continue;
      Box& b = boxes[labels[i]];
      const int64_t x = static_cast<int64_t>(i) % f.w, y = static_cast<int64_t>(i) / f.w;
      ++b.n;
      b.x0 = std::min(b.x0, x), b.x1 = std::max(b.x1, x), b.y0 = std::min(b.y0, y), b.y1 = std::max(b.y1, y);
    }
    int64_t kept = 0, compact = 0;
    for (const auto& [label, b] : boxes) {
      if (b.n < 5) continue;
      ++kept;
      const int64_t w = b.x1 - b.x0 + 1, h = b.y1 - b.y0 + 1;
      compact += w <= b.n && w * h <= 16 * b.n ? 1 : 0;
    }
    REQUIRE(compact < kept);  // the trail
    for (size_t v = 0; v < sets.size(); ++v) {
      Variant variant;
      variant.threshold_on_device = f.threshold_map.empty() && v % 2 == 1;
      check(("host splits " + std::to_string(t) + " set " + std::to_string(v)).c_str(), f, sets[v], workspace, stream,
            variant);
      if (sets[v].minarea == 5) CHECK(workspace.host_splits() == compact);
    }
  }
  Field crowded = crowd(420, 420, 40, 30, 9.0, 30.0, 7);
  crowded.threshold = 3.0f;
  DeblendParams params;
  params.mincont = 1e-5;
  check("1200 stars on the host", crowded, params, workspace, stream);
  CHECK(workspace.host_splits() >= 1);
}

TEST_CASE("GPU deblending of a segment split into more than 1000 objects", "[gpu][deblend][large]") {
  imflow::cuda::Stream stream;
  imflow::cuda::DeblendWorkspace workspace;
  Field f = crowd(420, 420, 40, 30, 9.0, 30.0, 7);
  f.threshold = 3.0f;
  DeblendParams params;
  params.mincont = 1e-5;
  params.clean = false;
  // The CPU's objects per segment: one segment holds more than 1000.
  int32_t nlabels = 0;
  const auto labels = segments(f, nlabels);
  imflow::kernels::DeblendInput input;
  input.detection = {f.image.data(), f.w, f.h};
  input.threshold = f.threshold;
  input.labels = labels.data();
  input.nlabels = nlabels;
  std::vector<int32_t> map(labels.size());
  const auto cpu = imflow::kernels::deblend_sources(input, params, map.data());
  std::map<int32_t, int> per_segment;
  for (const auto& o : cpu.objects) ++per_segment[o.segment];
  int most = 0;
  for (const auto& [segment, count] : per_segment) most = std::max(most, count);
  std::printf("deblend: most objects in one segment %d\n", most);
  REQUIRE(most > 1000);
  check("1200 stars, no CLEAN", f, params, workspace, stream);
  params.clean = true;
  check("1200 stars", f, params, workspace, stream);
  params.allocation = DeblendAllocation::most_probable;
  check_host_and_device("1200 stars, most probable", f, params, workspace, stream);
}

TEST_CASE("GPU deblending with nthresh 1, mincont 1, minarea 1", "[gpu][deblend]") {
  imflow::cuda::Stream stream;
  imflow::cuda::DeblendWorkspace workspace;
  const Field f = stars(5, 300, 250, 150, true, false);
  DeblendParams one_level;
  one_level.nthresh = 1;
  check("nthresh 1", f, one_level, workspace, stream);
  one_level.minarea = 1;
  one_level.clean = false;
  check("nthresh 1 minarea 1", f, one_level, workspace, stream);
  DeblendParams no_contrast;
  no_contrast.mincont = 1.0;
  check("mincont 1", f, no_contrast, workspace, stream);
  DeblendParams zero_contrast;
  zero_contrast.mincont = 0.0;
  zero_contrast.minarea = 1;
  check("mincont 0 minarea 1", f, zero_contrast, workspace, stream);
  DeblendParams few_levels;
  few_levels.nthresh = 2;
  check("nthresh 2", f, few_levels, workspace, stream);
}

TEST_CASE("GPU deblending rejects bad label maps as the CPU kernel does", "[gpu][deblend]") {
  imflow::cuda::Stream stream;
  imflow::cuda::DeblendWorkspace workspace;
  const Field f = stars(3, 64, 48, 10, false, false);
  int32_t nlabels = 0;
  std::vector<int32_t> labels = segments(f, nlabels);
  REQUIRE(nlabels >= 2);
  auto d_image = upload(f.image);
  imflow::cuda::DeviceBuffer<int32_t> d_out(f.image.size());
  imflow::cuda::DeblendDeviceInput in;
  in.width = f.w;
  in.height = f.h;
  in.detection = d_image.data();
  in.threshold = f.threshold;
  DeblendParams params;
  params.minarea = 1;
  // A label above n.
  {
    std::vector<int32_t> bad = labels;
    bad[0] = nlabels + 5;
    auto d_labels = upload(bad);
    in.labels = d_labels.data();
    in.nlabels = nlabels;
    CHECK_THROWS_AS(imflow::cuda::deblend(in, params, d_out.data(), nullptr, stream.get(), workspace), std::invalid_argument);
  }
  // Two separate groups under one label.
  {
    std::vector<int32_t> bad = labels;
    for (int32_t& l : bad)
      if (l == 2) l = 1;
    auto d_labels = upload(bad);
    in.labels = d_labels.data();
    in.nlabels = nlabels;
    imflow::cuda::deblend(in, params, d_out.data(), nullptr, stream.get(), workspace);
    stream.synchronize();
    CHECK_THROWS_AS(workspace.result(), std::invalid_argument);
  }
  // Two 4x4 squares one column apart under one label: a compact box, so with every segment split
  // on the host the host's tree finds them not connected.
  {
    std::vector<int32_t> squares(f.image.size(), 0);
    for (int64_t y = 10; y < 14; ++y)
      for (int64_t x = 10; x < 19; ++x)
        if (x != 14) squares[static_cast<size_t>(y * f.w + x)] = 1;
    auto d_labels = upload(squares);
    in.labels = d_labels.data();
    in.nlabels = 1;
    for (const int32_t host_min : {1, 0}) {
      workspace.set_host_split_min_pixels(host_min);
      imflow::cuda::deblend(in, params, d_out.data(), nullptr, stream.get(), workspace);
      stream.synchronize();
      CHECK(workspace.host_splits() == (host_min > 0 ? 1 : 0));
      CHECK_THROWS_AS(workspace.result(), std::invalid_argument);
    }
  }
  // The workspace works again afterwards.
  check("after errors", f, params, workspace, stream);
}

TEST_CASE("GPU deblending: one workspace across sizes, empty images and fields", "[gpu][deblend]") {
  imflow::cuda::Stream stream;
  imflow::cuda::DeblendWorkspace workspace;
  DeblendParams params;
  check("large first", stars(21, 500, 400, 300, true, true), params, workspace, stream);
  check("then small", stars(22, 40, 30, 4, true, false), params, workspace, stream);
  std::mt19937 rng(1);
  Field empty = noise(50, 40, rng);
  empty.threshold = 100.0f;  // no segment
  check("no segment", empty, params, workspace, stream);
  check("one column", stars(23, 1, 300, 20, false, false), params, workspace, stream);
  check("one row", stars(24, 300, 1, 20, false, false), params, workspace, stream);
  check("then medium", stars(25, 256, 256, 120, true, false), params, workspace, stream);
}
