// The catalog's CSV rows written on the device (cuda/catalog_text.cu) against the same cells made
// on the host (tests/csv_text_reference.hpp): byte for byte, with the same marks, for a measured
// sky and for rows of arbitrary bit patterns (every exponent, subnormals, NaN and infinities),
// including a text that outgrows its buffer (the host writes that one; the next one fits).
#include <bit>
#include <cstring>
#include <random>

#include "csv_text_reference.hpp"
#include "cuda/catalog_text.hpp"
#include "gpu_test_helpers.hpp"

using namespace gpu_test;

namespace {
void check_same_text(const imflow::CatalogCsvText& device, const imflow::Catalog& catalog) {
  const imflow::CatalogCsvText host = test::csv_text_as_device_writes(catalog);
  REQUIRE(device.rows.size() == host.rows.size());
  CHECK(device.rows == host.rows);
  REQUIRE(device.text().size() == host.text().size());
  size_t first_difference = 0;
  while (first_difference < host.text().size() && device.text()[first_difference] == host.text()[first_difference])
    ++first_difference;
  INFO("first difference at byte " << first_difference << ": "
                                   << host.text().substr(first_difference > 40 ? first_difference - 40 : 0, 80));
  CHECK(first_difference == host.text().size());
}
}  // namespace

TEST_CASE("GPU catalog CSV text is the host's for a measured sky", "[gpu][catalog_text]") {
  Slot slot;
  WorkItem item;
  fill_sky(item, 1021, 777, fresh_seed("catalog text sky"), 400);
  imflow::cuda::DownloadWants wants;
  wants.csv_text = true;
  run_item(
      slot, item,
      [](GpuContext& gpu) {
        imflow::cuda::background(gpu, 3.0, 100);
        imflow::cuda::segment(gpu, 5.0, false);
        imflow::cuda::label(gpu, 4);
        imflow::cuda::measure(gpu);
      },
      wants);
  REQUIRE(item.catalog.has_value());
  REQUIRE(item.catalog->size() > 100);
  REQUIRE(item.catalog_csv != nullptr);
  check_same_text(*item.catalog_csv, *item.catalog);

  // Not asked for: no text.
  WorkItem plain;
  fill_sky(plain, 257, 251, 3, 20);
  run_item(slot, plain, [](GpuContext& gpu) {
    imflow::cuda::background(gpu, 3.0, 100);
    imflow::cuda::segment(gpu, 5.0, false);
    imflow::cuda::label(gpu, 4);
    imflow::cuda::measure(gpu);
  });
  CHECK(plain.catalog_csv == nullptr);
}

TEST_CASE("GPU catalog CSV text of arbitrary doubles is the host's", "[gpu][catalog_text]") {
  Slot slot;
  WorkItem item;
  fill_sky(item, 301, 257, 5, 40);
  imflow::cuda::DownloadWants wants;
  wants.csv_text = true;
  const auto steps = [](GpuContext& gpu) {
    imflow::cuda::background(gpu, 3.0, 100);
    imflow::cuda::segment(gpu, 5.0, false);
    imflow::cuda::label(gpu, 4);
    imflow::cuda::measure(gpu);
  };
  run_item(slot, item, steps, wants);  // the slot's text buffers now exist
  REQUIRE(slot.gpu.catalog_text != nullptr);

  std::mt19937_64 rng(fresh_seed("catalog text bits"));
  const auto any_double = [&] {
    switch (rng() % 4) {
      case 0: return std::bit_cast<double>(rng());          // any exponent, NaN, infinities
      case 1: return std::bit_cast<double>(rng() >> 12);    // subnormals
      case 2: return std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(rng() % 140) - 60);
      default: return static_cast<double>(static_cast<int64_t>(rng() % 2000001) - 1000000) / 1000.0;
    }
  };
  imflow::Catalog catalog(20000);
  for (imflow::Source& s : catalog) {
    for (double* field : {&s.x, &s.y, &s.ra, &s.dec, &s.flux, &s.peak, &s.flux_iso, &s.flux_iso_err, &s.x2, &s.y2,
                          &s.xy, &s.errx2, &s.erry2, &s.errxy, &s.a, &s.b, &s.theta, &s.cxx, &s.cyy, &s.cxy}) {
      *field = any_double();
    }
    s.id = static_cast<int32_t>(rng());
    s.flags = static_cast<int32_t>(rng() % 64);
    for (int64_t* field : {&s.npix, &s.peak_x, &s.peak_y, &s.xmin, &s.xmax, &s.ymin, &s.ymax}) {
      *field = static_cast<int64_t>(rng() >> (2 + rng() % 62)) * (rng() % 2 ? 1 : -1);  // below 2^62
    }
  }
  GpuContext& gpu = slot.gpu;
  REQUIRE(static_cast<int64_t>(catalog.size()) <= gpu.catalog_capacity);
  const int nlabels = static_cast<int>(catalog.size());
  const auto text_of_rows = [&] {
    IMFLOW_CUDA_CHECK(cudaMemcpy(gpu.catalog_text->rows.data(), catalog.data(), catalog.size() * sizeof(imflow::Source),
                                 cudaMemcpyHostToDevice));
    IMFLOW_CUDA_CHECK(cudaMemcpy(&gpu.results.data()->nlabels, &nlabels, sizeof nlabels, cudaMemcpyHostToDevice));
    imflow::cuda::enqueue_catalog_text(gpu);
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(gpu.results_host.data(), gpu.results.data(), sizeof(imflow::cuda::DeviceResults),
                                      cudaMemcpyDeviceToHost, gpu.stream));
    slot.stream.synchronize();
    return imflow::cuda::collect_catalog_text(gpu, nlabels);
  };
  // ~16 MB of text: more than the slot's first buffer, which then grows.
  const size_t capacity = gpu.catalog_text->text_capacity;
  CHECK(text_of_rows() == nullptr);
  CHECK(gpu.results_host.data()->csv_text_bytes == -1);
  CHECK(gpu.catalog_text->text_capacity > capacity);
  std::shared_ptr<const imflow::CatalogCsvText> text;
  for (int attempt = 0; attempt < 4 && text == nullptr; ++attempt) text = text_of_rows();
  REQUIRE(text != nullptr);
  check_same_text(*text, catalog);
}
