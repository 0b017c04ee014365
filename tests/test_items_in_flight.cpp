// The work items a run keeps in flight when the pipeline does not set them (CPU buffers, CUDA pinned items).
#include <catch2/catch.hpp>

#include "engine/items_in_flight.hpp"
#include "imflow/errors.hpp"
#include "imflow/pipeline.hpp"
#include "imflow/tiling.hpp"
#include "test_helpers.hpp"

using imflow::choose_gpu_tokens;

namespace {
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr int64_t kImage2048 = int64_t{2048} * 2048 * 4;
}  // namespace

TEST_CASE("pinned items: two per host thread, at least two per stream", "[items_in_flight]") {
  // 16 threads, 4 streams: 32 items, 8 per stream.
  const auto choice = choose_gpu_tokens(4, 16, kImage2048, 128 * kGiB);
  CHECK(choice.automatic);
  CHECK(choice.per_stream == 8);
  CHECK(choice.items == 32);
  CHECK(choice.item_bytes == kImage2048);
  // Rounded up to whole buffers per stream: 6 threads, 4 streams -> 12 items -> 3 per stream.
  CHECK(choose_gpu_tokens(4, 6, kImage2048, 128 * kGiB).per_stream == 3);
  // Never fewer than double buffering, never more than 16 per stream.
  CHECK(choose_gpu_tokens(8, 1, kImage2048, 128 * kGiB).per_stream == 2);
  CHECK(choose_gpu_tokens(64, 0, kImage2048, 128 * kGiB).per_stream == 2);
  CHECK(choose_gpu_tokens(1, 256, kImage2048, 128 * kGiB).per_stream == 16);
  // Two GPUs of 4 streams share 32 host threads: 64 items over 8 slots.
  CHECK(choose_gpu_tokens(8, 32, kImage2048, 256 * kGiB).per_stream == 8);
}

TEST_CASE("pinned items stay within an eighth of host memory and 8 GiB", "[items_in_flight]") {
  // 16 GiB host: 2 GiB of pinned items of 64 MiB over 4 streams -> 32 items -> 8 per stream: fits.
  CHECK(choose_gpu_tokens(4, 16, int64_t{64} << 20, 16 * kGiB).per_stream == 8);
  // 8 GiB host: 1 GiB -> 16 items of 64 MiB -> 4 per stream, cut from 8.
  const auto cut = choose_gpu_tokens(4, 16, int64_t{64} << 20, 8 * kGiB);
  CHECK(cut.per_stream == 4);
  CHECK(cut.items == 16);
  CHECK_THAT(cut.reason, Catch::Contains("pinned memory"));
  // Huge items: the 8 GiB cap, and never below two per stream.
  CHECK(choose_gpu_tokens(4, 16, int64_t{512} << 20, 1024 * kGiB).per_stream == 4);
  CHECK(choose_gpu_tokens(4, 16, int64_t{4} << 30, 64 * kGiB).per_stream == 2);
  // Unknown item size or memory: the thread rule alone.
  CHECK(choose_gpu_tokens(4, 16, 0, 8 * kGiB).per_stream == 8);
}

TEST_CASE("buffers_per_stream: 0 or absent is automatic, up to 1024 explicit, negative is an error", "[items_in_flight][config]") {
  CHECK(imflow::parse_pipeline("steps: [background]\n", "test.yaml").engine.buffers_per_stream == 0);
  CHECK(imflow::parse_pipeline("buffers_per_stream: 5\nsteps: [background]\n", "test.yaml").engine.buffers_per_stream == 5);
  // More than the automatic choice's 16 (a pool that grows may pass it too; batches hold hundreds).
  CHECK(imflow::parse_pipeline("buffers_per_stream: 1024\nsteps: [background]\n", "test.yaml").engine.buffers_per_stream == 1024);
  CHECK_THROWS_AS(imflow::parse_pipeline("buffers_per_stream: 1025\nsteps: [background]\n", "test.yaml"), imflow::ConfigError);
  CHECK(imflow::parse_pipeline("steps: [background]\n", "test.yaml").engine.memory_mb == 1024);
  CHECK_THROWS_AS(imflow::parse_pipeline("buffers_per_stream: -1\nsteps: [background]\n", "test.yaml"), imflow::ConfigError);
}

TEST_CASE("CPU buffers: two per thread within the memory budget", "[items_in_flight]") {
  constexpr int64_t kMiB = int64_t{1} << 20;
  // 2048x2048 float32 planes: 16 MiB stored, 64 MiB of working set per item (16 bytes per pixel).
  const auto fits = imflow::choose_cpu_buffers(4, kImage2048, 1024 * kMiB);
  CHECK(fits.automatic);
  CHECK(fits.items == 8);
  CHECK(fits.item_bytes == 64 * kMiB);
  // 16 threads want 32 items = 2 GiB: cut to the 1 GiB budget, 16 items.
  const auto cut = imflow::choose_cpu_buffers(16, kImage2048, 1024 * kMiB);
  CHECK(cut.items == 16);
  CHECK_THAT(cut.reason, Catch::Contains("memory budget of 1024 MiB"));
  // A 4096 tile with a 64-pixel halo: 4224^2 x 16 bytes = 272 MiB per item -> 3 in 1 GiB, whatever the threads.
  const int64_t tile = int64_t{4224} * 4224 * 4;
  CHECK(imflow::choose_cpu_buffers(16, tile, 1024 * kMiB).items == 3);
  CHECK(imflow::choose_cpu_buffers(128, tile, 1024 * kMiB).items == 3);
  // Never fewer than one; unknown sizes keep two per thread.
  CHECK(imflow::choose_cpu_buffers(16, int64_t{32000} * 32000 * 4, 1024 * kMiB).items == 1);
  CHECK(imflow::choose_cpu_buffers(16, 0, 1024 * kMiB).items == 32);
}

TEST_CASE("explicit buffers and buffers_per_stream win over the automatic choice", "[items_in_flight]") {
  imflow::EngineConfig engine;
  engine.buffers = 5;
  engine.buffers_per_stream = 3;
  const auto cpu = imflow::cpu_buffers_for_run(engine, 16, kImage2048);
  CHECK(cpu.items == 5);
  CHECK_FALSE(cpu.automatic);
  const auto gpu = imflow::gpu_tokens_for_run(engine, 4, 16, kImage2048);
  CHECK(gpu.per_stream == 3);
  CHECK(gpu.items == 12);
  CHECK_FALSE(gpu.automatic);
  engine.buffers = 0;
  engine.memory_mb = 128;
  CHECK(imflow::cpu_buffers_for_run(engine, 16, kImage2048).items == 2);
}

TEST_CASE("GPU batches: 48 MiB of items, at most 256, within the pinned budget", "[items_in_flight]") {
  // The 217x181 MRI slices (157 KB as float32): 320 fit, capped at 256.
  const auto mri = imflow::choose_gpu_batch(4, int64_t{217} * 181 * 4, 128 * kGiB);
  CHECK(mri.automatic);
  CHECK(mri.batch == imflow::kMaxGpuBatch);
  // 512x512 slices (1 MiB): 48; 2048x2048 (16 MiB): 3; larger than 48 MiB: one per launch.
  CHECK(imflow::choose_gpu_batch(4, int64_t{512} * 512 * 4, 128 * kGiB).batch == 48);
  CHECK(imflow::choose_gpu_batch(4, kImage2048, 128 * kGiB).batch == 3);
  CHECK(imflow::choose_gpu_batch(4, int64_t{8192} * 8192 * 4, 128 * kGiB).batch == 1);
  // 1 GiB host: 128 MiB of pinned memory over 4 streams' batches and the one gathered (5 batches)
  // of 1 MiB items -> 25, cut from 48.
  const auto cut = imflow::choose_gpu_batch(4, int64_t{1} << 20, kGiB);
  CHECK(cut.batch == 25);
  CHECK_THAT(cut.reason, Catch::Contains("pinned memory"));
  // Unknown size: 64. Set by the pipeline: kept as it is.
  CHECK(imflow::choose_gpu_batch(4, 0, 128 * kGiB).batch == imflow::kGpuBatchUnknownSize);
  imflow::EngineConfig engine;
  CHECK(engine.batch == 0);
  CHECK(imflow::gpu_batch_for_run(engine, 4, int64_t{217} * 181 * 4).automatic);
  engine.batch = 7;
  const auto set = imflow::gpu_batch_for_run(engine, 4, int64_t{217} * 181 * 4);
  CHECK(set.batch == 7);
  CHECK_FALSE(set.automatic);
  CHECK(imflow::parse_pipeline("batch: 32\nsteps: [background]\n", "test.yaml").engine.batch == 32);
  CHECK_THROWS_AS(imflow::parse_pipeline("batch: -1\nsteps: [background]\n", "test.yaml"), imflow::ConfigError);
}

TEST_CASE("GPU batch mode's pool: a batch per stream, one gathered, two per host thread", "[items_in_flight]") {
  // 256-slice batches on 4 streams with 16 threads: 256 x 5 + 32 = 1,312 items, 328 per stream.
  const auto pool = imflow::gpu_batch_items(256, 4, 16);
  CHECK(pool.automatic);
  CHECK(pool.items == 1312);
  CHECK(pool.per_stream == 328);
  CHECK(pool.to_json().at("items") == 1312);
  // Rounded up per stream; never a division by zero slots.
  CHECK(imflow::gpu_batch_items(7, 3, 1).items == 30);
  CHECK(imflow::gpu_batch_items(7, 3, 1).per_stream == 10);
  CHECK(imflow::gpu_batch_items(64, 0, 2).items == 132);
}

TEST_CASE("a file compressed whole counts at its whole plane, a plain one at a tile", "[items_in_flight]") {
  test::TempDir dir("items_plane_bytes");
  const std::vector<double> sky(300 * 200, 1.0);
  test::write_fits(dir / "m.fits", -32, {300, 200}, sky);
  test::write_fits(dir / "m.fits.gz", -32, {300, 200}, sky);  // CFITSIO gzips a name ending in .gz
  imflow::TilingPlan plan;
  plan.size = 64;
  plan.halo = 4;
  CHECK(imflow::first_plane_bytes({dir / "m.fits"}, &plan) == 72 * 72 * 4);  // a tile and its halo
  CHECK(imflow::first_plane_bytes({dir / "m.fits.gz"}, &plan) == 300 * 200 * 4);  // inflated whole
  CHECK(imflow::first_plane_bytes({dir / "m.fits"}, nullptr) == 300 * 200 * 4);
}
