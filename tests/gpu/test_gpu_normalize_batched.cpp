// Batched GPU normalize (minmax and zscore, nonfinite keep and zero) on one GpuBatch, against
// the per-item kernel on each image: pixels, offset and scale, zeroed-pixel counts.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "cuda/gpu_batch.hpp"
#include "cuda/normalize.hpp"
#include "cuda/normalize_batched.hpp"
#include "gpu_test_helpers.hpp"
#include "svd_test_helpers.hpp"

using gpu_test::Slot;
using imflow::WorkItem;
using namespace svd_test;
namespace icuda = imflow::cuda;

TEST_CASE("Batched GPU normalize matches the per-item kernel (nonfinite keep and zero)", "[gpu][mri][batched]") {
  Slot slot;
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> noise(120.0f, 40.0f);
  const int64_t w = 181, h = 217;
  std::vector<std::vector<float>> images(4, std::vector<float>(static_cast<size_t>(w * h)));
  for (auto& image : images)
    for (auto& x : image) x = noise(rng);
  std::fill(images[1].begin(), images[1].end(), 42.0f);
  std::fill(images[2].begin(), images[2].end(), NAN);
  images[3][5] = NAN;
  images[3][77] = INFINITY;
  for (int mode = 0; mode < 4; ++mode) {
    const bool zero = mode >= 2, zscore = mode % 2 == 1;
    std::vector<WorkItem> batch_items(images.size());
    std::vector<WorkItem*> pointers;
    for (size_t b = 0; b < images.size(); ++b) {
      set_pixels(batch_items[b], w, h, images[b]);
      pointers.push_back(&batch_items[b]);
    }
    imflow::GpuBatch batch(0, slot.stream.get());
    icuda::enqueue_batch_upload(batch, pointers.data(), 4);
    icuda::normalize_batched(batch.images.data(), batch.pixels(), 4, batch.results.data(), zscore, zero, batch.stream);
    batch.has_normalization = batch.image_modified = true;
    icuda::enqueue_batch_download(batch, pointers.data(), 4);
    slot.stream.synchronize();
    for (size_t b = 0; b < images.size(); ++b) {
      INFO("zero " << zero << " zscore " << zscore << " image " << b);
      icuda::collect_batch_item(batch, static_cast<int>(b), batch_items[b]);
      WorkItem single;
      set_pixels(single, w, h, images[b]);
      run_on_gpu(slot, single, [&](imflow::GpuContext& g) { icuda::normalize(g, zscore, zero); });
      CHECK(batch_items[b].metrics == single.metrics);  // zeroed_pixels, when any
      CHECK(single.metrics.count("zeroed_pixels") == (zero && (b == 2 || b == 3) ? 1u : 0u));
      REQUIRE(batch_items[b].normalization.has_value());
      CHECK(batch_items[b].normalization->offset == Approx(single.normalization->offset).epsilon(1e-12).margin(1e-12));
      CHECK(batch_items[b].normalization->scale == Approx(single.normalization->scale).epsilon(1e-12).margin(1e-12));
      size_t mismatches = 0;
      for (int64_t i = 0; i < w * h; ++i) {
        const float a = batch_items[b].pixels.data()[i], r = single.pixels.data()[i];
        if (std::isnan(r) ? !std::isnan(a) : (std::isinf(r) ? a != r : std::abs(a - r) > 1e-6f * (1.0f + std::abs(r))))
          ++mismatches;
      }
      CHECK(mismatches == 0);
    }
  }
}
