// Per-source measurements on the CPU: one raster pass accumulating float64 sums per label
// (runs of background labels skipped sixteen at a time).
#include "imflow/kernels/measure.hpp"

#include "imflow/kernels/deblend.hpp"
#include "imflow/kernels/mesh_rows.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

namespace imflow::kernels {

namespace {
// Whether each row of the image holds a non-finite pixel, found when first asked (one vectorised
// pass over the row): most images have none, and then no source pixel's neighbours are visited.
class NonFiniteRows {
 public:
  explicit NonFiniteRows(ConstImageView image) : image_(image), state_(static_cast<size_t>(image.height), kUnknown) {}

  // Whether row y - 1, y or y + 1 (those inside the image) holds a non-finite pixel.
  bool near(int64_t y) { return (y > 0 && holds(y - 1)) || holds(y) || (y + 1 < image_.height && holds(y + 1)); }

 private:
  static constexpr int8_t kUnknown = -1;

  bool holds(int64_t y) {
    int8_t& state = state_[static_cast<size_t>(y)];
    if (state == kUnknown) {
      const float* row = image_.data + y * image_.width;
      uint32_t non_finite = 0;
      for (int64_t x = 0; x < image_.width; ++x) {
        uint32_t bits;
        std::memcpy(&bits, row + x, sizeof bits);
        non_finite |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);  // exponent all ones
      }
      state = static_cast<int8_t>(non_finite);
    }
    return state != 0;
  }

  ConstImageView image_;
  std::vector<int8_t> state_;
};

// Whether one of the 8 neighbours of (x, y) inside the image is not finite.
bool masked_neighbour(ConstImageView image, int64_t x, int64_t y) {
  for (int64_t ny = y - 1; ny <= y + 1; ++ny) {
    if (ny < 0 || ny >= image.height) continue;
    const float* row = image.data + ny * image.width;
    for (int64_t nx = x - 1; nx <= x + 1; ++nx) {
      if (nx >= 0 && nx < image.width && !std::isfinite(row[nx])) return true;
    }
  }
  return false;
}

// The first x >= from with row[x] != 0 (or width): most of a label map is 0, skipped sixteen
// labels (a cache line) at a time.
int64_t next_labelled(const int32_t* row, int64_t from, int64_t width) {
  constexpr int64_t kStep = 16;
  int64_t x = from;
  for (; x + kStep <= width; x += kStep) {
    int32_t any = 0;
    for (int64_t k = 0; k < kStep; ++k) any |= row[x + k];
    if (any != 0) break;
  }
  while (x < width && row[x] == 0) ++x;
  return x;
}
}  // namespace

std::vector<SourceSums> accumulate_sources(ConstImageView image, const int32_t* labels, int32_t nlabels,
                                           int64_t x0, int64_t y0, MeasureBackground background) {
  std::vector<SourceSums> sums(static_cast<size_t>(nlabels));
  std::optional<MeshRows> grid_rows;
  std::vector<float> grid_rms;  // row y of the grid's RMS map, evaluated at the row's first source pixel
  if (background.rms_grid != nullptr) {
    if (background.rms_grid->width != image.width || background.rms_grid->height != image.height)
      throw std::invalid_argument("accumulate_sources: the RMS mesh grid is not the image's size");
    grid_rows.emplace(*background.rms_grid);
    grid_rms.resize(static_cast<size_t>(image.width));
  }
  const double backnoise2 = background.weight_gain_rms * background.weight_gain_rms;  // 0: no WEIGHT_GAIN
  NonFiniteRows non_finite_rows(image);
  for (int64_t y = 0; y < image.height; ++y) {
    const int64_t row = y * image.width;
    bool grid_row_ready = false;
    int8_t near_non_finite = -1;  // whether rows y - 1..y + 1 hold a non-finite pixel; -1: not asked yet
    for (int64_t x = 0; x < image.width; ++x) {
      x = next_labelled(labels + row, x, image.width);
      if (x == image.width) break;
      const int32_t label = labels[row + x];
      if (label <= 0) continue;
      SourceSums& s = sums[label - 1];
      double rms = background.rms;
      if (background.rms_map != nullptr) {
        rms = background.rms_map[row + x];
      } else if (grid_rows) {
        if (!grid_row_ready) grid_rows->rms(y, grid_rms.data());
        grid_row_ready = true;
        rms = grid_rms[static_cast<size_t>(x)];
      }
      if (background.map != nullptr) {  // in float32, as SEP's data - bkg (and the GPU)
        const float subtracted = image.data[row + x] - background.map[row + x];
        s.add(x0 + x, y0 + y, subtracted, 0.0, pixel_variance(rms, subtracted, background.gain, backnoise2));
      } else {
        const double value = image.data[row + x];
        s.add(x0 + x, y0 + y, value, background.level,
              pixel_variance(rms, value - background.level, background.gain, backnoise2));
      }
      if (near_non_finite < 0) near_non_finite = non_finite_rows.near(y) ? 1 : 0;
      if (near_non_finite != 0 && masked_neighbour(image, x, y)) s.flags |= kFlagMaskedNeighbour;
    }
  }
  return sums;
}

Catalog finish_sources(const std::vector<SourceSums>& sums, int64_t width, int64_t height) {
  // Rows are independent: a mosaic's million sources are finished on all threads (isolated: the
  // waiting thread takes no unrelated task of the graph).
  Catalog catalog(sums.size());
  auto finish_rows = [&](const tbb::blocked_range<size_t>& rows) {
    for (size_t k = rows.begin(); k < rows.end(); ++k) {
      catalog[k] = sums[k].finish(static_cast<int32_t>(k + 1), width, height);
    }
  };
  constexpr size_t kSerialRows = 16384;
  if (sums.size() <= kSerialRows) {
    finish_rows({0, sums.size()});
  } else {
    const tbb::blocked_range<size_t> all(0, sums.size(), 4096);
    tbb::this_task_arena::isolate([&] { tbb::parallel_for(all, finish_rows); });
  }
  return catalog;
}

Catalog measure_sources(ConstImageView image, const int32_t* labels, int32_t nlabels, MeasureBackground background) {
  return finish_sources(accumulate_sources(image, labels, nlabels, 0, 0, background), image.width, image.height);
}

Catalog measure_deblended(ConstImageView image, const int32_t* labels, int32_t nlabels, const DeblendResult& deblend,
                          MeasureBackground background) {
  const auto& objects = deblend.objects;
  if (static_cast<int64_t>(objects.size()) != nlabels)
    throw std::runtime_error("measure: the label map is not the one deblend made");
  const std::vector<SourceSums> sums = accumulate_sources(image, labels, nlabels, 0, 0, background);
  Catalog catalog = finish_sources(sums, image.width, image.height);
  for (size_t k = 0; k < objects.size(); ++k) {
    if (objects[k].blended || objects[k].merged) {
      catalog[k] =
          sums[k].finish_about(static_cast<int32_t>(k + 1), image.width, image.height, objects[k].x, objects[k].y);
      const int32_t deblended = objects[k].blended ? kFlagDeblended : 0;
      catalog[k].flags =
          (catalog[k].flags & ~(kFlagEdge | kFlagDeblended)) | deblended | (objects[k].truncated ? kFlagEdge : 0);
    }
    catalog[k].flags |= objects[k].singular ? kFlagSingular : 0;  // SEP's analyse, or these moments
  }
  return catalog;
}

}  // namespace imflow::kernels
