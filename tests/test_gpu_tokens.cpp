// The CUDA engine's choice of pinned work items when buffers_per_stream is not set.
#include <catch2/catch.hpp>

#include "engine/gpu_tokens.hpp"
#include "imflow/errors.hpp"
#include "imflow/pipeline.hpp"

using imflow::choose_gpu_tokens;

namespace {
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr int64_t kImage2048 = int64_t{2048} * 2048 * 4;
}  // namespace

TEST_CASE("pinned items: two per host thread, at least two per stream", "[gpu_tokens]") {
  // 16 threads, 4 streams: 32 items, 8 per stream.
  const auto choice = choose_gpu_tokens(4, 16, kImage2048, 128 * kGiB);
  CHECK(choice.automatic);
  CHECK(choice.buffers_per_stream == 8);
  CHECK(choice.tokens == 32);
  CHECK(choice.item_bytes == kImage2048);
  // Rounded up to whole buffers per stream: 6 threads, 4 streams -> 12 items -> 3 per stream.
  CHECK(choose_gpu_tokens(4, 6, kImage2048, 128 * kGiB).buffers_per_stream == 3);
  // Never fewer than double buffering, never more than 16 per stream.
  CHECK(choose_gpu_tokens(8, 1, kImage2048, 128 * kGiB).buffers_per_stream == 2);
  CHECK(choose_gpu_tokens(64, 0, kImage2048, 128 * kGiB).buffers_per_stream == 2);
  CHECK(choose_gpu_tokens(1, 256, kImage2048, 128 * kGiB).buffers_per_stream == 16);
  // Two GPUs of 4 streams share 32 host threads: 64 items over 8 slots.
  CHECK(choose_gpu_tokens(8, 32, kImage2048, 256 * kGiB).buffers_per_stream == 8);
}

TEST_CASE("pinned items stay within an eighth of host memory and 8 GiB", "[gpu_tokens]") {
  // 16 GiB host: 2 GiB of pinned items of 64 MiB over 4 streams -> 32 items -> 8 per stream: fits.
  CHECK(choose_gpu_tokens(4, 16, int64_t{64} << 20, 16 * kGiB).buffers_per_stream == 8);
  // 8 GiB host: 1 GiB -> 16 items of 64 MiB -> 4 per stream, cut from 8.
  const auto cut = choose_gpu_tokens(4, 16, int64_t{64} << 20, 8 * kGiB);
  CHECK(cut.buffers_per_stream == 4);
  CHECK(cut.tokens == 16);
  CHECK_THAT(cut.reason, Catch::Contains("pinned memory"));
  // Huge items: the 8 GiB cap, and never below two per stream.
  CHECK(choose_gpu_tokens(4, 16, int64_t{512} << 20, 1024 * kGiB).buffers_per_stream == 4);
  CHECK(choose_gpu_tokens(4, 16, int64_t{4} << 30, 64 * kGiB).buffers_per_stream == 2);
  // Unknown item size or memory: the thread rule alone.
  CHECK(choose_gpu_tokens(4, 16, 0, 8 * kGiB).buffers_per_stream == 8);
}

TEST_CASE("buffers_per_stream: 0 or absent is automatic, negative is an error", "[gpu_tokens][config]") {
  CHECK(imflow::parse_pipeline("steps: [background]\n", "test.yaml").engine.buffers_per_stream == 0);
  CHECK(imflow::parse_pipeline("buffers_per_stream: 5\nsteps: [background]\n", "test.yaml").engine.buffers_per_stream == 5);
  CHECK_THROWS_AS(imflow::parse_pipeline("buffers_per_stream: -1\nsteps: [background]\n", "test.yaml"), imflow::ConfigError);
}
