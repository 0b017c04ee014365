// Source measurements on hand-made label maps with known centroids, fluxes and peaks.
#include <catch2/catch.hpp>

#include <vector>

#include "imflow/kernels/measure.hpp"

TEST_CASE("isolated deltas and a weighted pair", "[measure]") {
  // 5x4 image: a delta of 3 at (1,1); a pair (3,2)=1, (4,2)=3 -> centroid x = (3*1+4*3)/4 = 3.75.
  std::vector<float> image(20, 0.f);
  std::vector<int32_t> labels(20, 0);
  image[1 * 5 + 1] = 3.f;
  labels[1 * 5 + 1] = 1;
  image[2 * 5 + 3] = 1.f;
  image[2 * 5 + 4] = 3.f;
  labels[2 * 5 + 3] = labels[2 * 5 + 4] = 2;
  const auto catalog = imflow::kernels::measure_sources({image.data(), 5, 4}, labels.data(), 2);
  REQUIRE(catalog.size() == 2);
  CHECK(catalog[0].id == 1);
  CHECK(catalog[0].x == 1.0);
  CHECK(catalog[0].y == 1.0);
  CHECK(catalog[0].flux == 3.0);
  CHECK(catalog[0].npix == 1);
  CHECK(catalog[1].x == 3.75);
  CHECK(catalog[1].y == 2.0);
  CHECK(catalog[1].flux == 4.0);
  CHECK(catalog[1].npix == 2);
  CHECK(catalog[1].peak == 3.0);
  CHECK(catalog[1].peak_x == 4);
  CHECK(catalog[1].xmin == 3);
  CHECK(catalog[1].xmax == 4);
  CHECK(catalog[1].ymin == 2);
  CHECK(catalog[1].ymax == 2);
}

TEST_CASE("the first maximum in raster order is the peak", "[measure]") {
  std::vector<float> image = {5, 5, 1, 5};
  std::vector<int32_t> labels = {1, 1, 1, 1};
  const auto catalog = imflow::kernels::measure_sources({image.data(), 2, 2}, labels.data(), 1);
  CHECK(catalog[0].peak_x == 0);
  CHECK(catalog[0].peak_y == 0);
  CHECK(catalog[0].flux == 16.0);
  CHECK(catalog[0].x == Approx((0 * 5 + 1 * 5 + 0 * 1 + 1 * 5) / 16.0));
  CHECK(catalog[0].y == Approx((0 * 10 + 1 * 6) / 16.0));
}
