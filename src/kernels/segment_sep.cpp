// SEP's detection arithmetic on the CPU (kernels/segment_sep.hpp), row by row: float32
// subtraction and product, as sep.extract(data - bkg, thresh, err=...) computes them.
#include "imflow/kernels/segment_sep.hpp"

#include <cmath>
#include <limits>
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

// One row of sep_threshold_mask, the background and noise rows (or levels) chosen at compile
// time so that the loop has no branch and is vectorised; the same float32 operations.
template <bool kBackRow, bool kRmsRow>
uint32_t sep_threshold_row(const float* pixels, const float* back, float level, const float* rms, float nsigma,
                           float fixed, int64_t width, uint8_t* mask) {
  constexpr float kLargest = std::numeric_limits<float>::max();
  uint32_t count = 0;
  for (int64_t x = 0; x < width; ++x) {
    const float value = pixels[x] - (kBackRow ? back[x] : level);
    const float limit = kRmsRow ? nsigma * rms[x] : fixed;
    const uint8_t on = static_cast<uint8_t>((std::fabs(pixels[x]) <= kLargest) & (value > limit));  // NaN: false
    mask[x] = on;
    count += on;
  }
  return count;
}
}  // namespace

int64_t sep_threshold_mask(ConstImageView image, const SepDetection& d, uint8_t* mask) {
  int64_t count = 0;
  const float nsigma = d.nsigma, fixed = d.threshold(), level = d.back_level;
  for_each_row(image, d, [&](int64_t row, const float* pixels, const float* back, const float* rms) {
    const auto threshold_row = back != nullptr
                                   ? (rms != nullptr ? sep_threshold_row<true, true> : sep_threshold_row<true, false>)
                                   : (rms != nullptr ? sep_threshold_row<false, true> : sep_threshold_row<false, false>);
    count += threshold_row(pixels, back, level, rms, nsigma, fixed, image.width, mask + row);
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

std::vector<int64_t> sep_count_above(ConstImageView values, const int32_t* labels, const std::vector<float>& thresh) {
  std::vector<int64_t> counts(thresh.size(), 0);
  const int64_t n = values.size();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t l = labels[i];
    if (l > 0 && values.data[i] > thresh[static_cast<size_t>(l - 1)]) ++counts[static_cast<size_t>(l - 1)];
  }
  return counts;
}

std::vector<float> sep_mean_thresholds(const int32_t* labels, int64_t npixels, int32_t nlabels, const float* thresholds,
                                       float threshold) {
  std::vector<float> mean(static_cast<size_t>(nlabels), threshold);
  if (thresholds == nullptr) return mean;
  std::vector<double> sum(static_cast<size_t>(nlabels), 0.0);
  std::vector<int64_t> count(static_cast<size_t>(nlabels), 0);
  for (int64_t i = 0; i < npixels; ++i) {
    const int32_t l = labels[i];
    if (l <= 0) continue;
    sum[static_cast<size_t>(l - 1)] += static_cast<double>(thresholds[i]);
    ++count[static_cast<size_t>(l - 1)];
  }
  for (size_t k = 0; k < mean.size(); ++k)
    if (count[k] > 0) mean[k] = static_cast<float>(sum[k] / static_cast<double>(count[k]));
  return mean;
}

}  // namespace imflow::kernels
