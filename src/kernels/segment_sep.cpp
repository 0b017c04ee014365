// SEP's detection arithmetic on the CPU (kernels/segment_sep.hpp), row by row: float32
// subtraction and product, as sep.extract(data - bkg, thresh, err=...) computes them.
#include "imflow/kernels/segment_sep.hpp"

#include <cmath>
#include <optional>
#include <vector>

#include "imflow/kernels/mesh_rows.hpp"

namespace imflow::kernels {

namespace {
// Visits the image row by row with the row's background (nullptr: back_level) and noise
// (nullptr: rms_level) rows.
template <typename Body>
void for_each_row(ConstImageView image, const SepDetection& d, Body body) {
  std::optional<MeshRows> grid_rows;
  std::vector<float> grid_rms;
  if (d.rms == nullptr && d.rms_grid != nullptr) {
    grid_rows.emplace(*d.rms_grid);
    grid_rms.resize(static_cast<size_t>(image.width));
  }
  for (int64_t y = 0; y < image.height; ++y) {
    const int64_t row = y * image.width;
    const float* rms = nullptr;
    if (d.rms != nullptr) {
      rms = d.rms + row;
    } else if (grid_rows) {
      grid_rows->rms(y, grid_rms.data());
      rms = grid_rms.data();
    }
    body(row, image.data + row, d.back != nullptr ? d.back + row : nullptr, rms);
  }
}
}  // namespace

int64_t sep_threshold_mask(ConstImageView image, const SepDetection& d, uint8_t* mask) {
  int64_t count = 0;
  const float nsigma = d.nsigma, fixed = d.threshold(), level = d.back_level;
  for_each_row(image, d, [&](int64_t row, const float* pixels, const float* back, const float* rms) {
    for (int64_t x = 0; x < image.width; ++x) {
      const float value = pixels[x] - (back != nullptr ? back[x] : level);
      const float limit = rms != nullptr ? nsigma * rms[x] : fixed;
      const bool on = std::isfinite(pixels[x]) && value > limit;
      mask[row + x] = on ? 1 : 0;
      count += on;
    }
  });
  return count;
}

void sep_detection_values(ConstImageView image, const SepDetection& d, float* values, float* thresholds) {
  const float nsigma = d.nsigma, level = d.back_level;
  for_each_row(image, d, [&](int64_t row, const float* pixels, const float* back, const float* rms) {
    for (int64_t x = 0; x < image.width; ++x) values[row + x] = pixels[x] - (back != nullptr ? back[x] : level);
    if (rms != nullptr && thresholds != nullptr)
      for (int64_t x = 0; x < image.width; ++x) thresholds[row + x] = nsigma * rms[x];
  });
}

}  // namespace imflow::kernels
