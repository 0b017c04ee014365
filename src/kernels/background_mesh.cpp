// The SExtractor/SEP mesh background on the CPU (see include/imflow/kernels/background_mesh.hpp).
// Arithmetic follows SEP's background.c type for type (float where SEP stores floats, double
// sums), so that the maps agree with sep.Background to float rounding.
#include "imflow/kernels/background_mesh.hpp"
#include "imflow/kernels/mesh_fill.hpp"
#include "imflow/kernels/mesh_rows.hpp"
#include "imflow/kernels/mesh_spline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sep_backstat.hpp"

namespace imflow::kernels {

namespace {

// Median of n floats as SEP's fqmedian (mean of the middle two, in float). Reorders the values
// (ascending, NaN last).
float float_median(float* values, int64_t n) {
  std::sort(values, values + n, [](float a, float b) { return a < b || (!std::isnan(a) && std::isnan(b)); });
  if (n < 2) return values[0];
  return (n & 1) ? values[n / 2] : static_cast<float>((values[n / 2 - 1] + values[n / 2]) / 2.0);
}

}  // namespace

void fill_and_filter(MeshGrid& grid, int64_t filter_width, int64_t filter_height, double filter_threshold) {
  const int64_t nx = grid.nx, ny = grid.ny, np = nx * ny;
  std::vector<float>& back = grid.back;
  std::vector<float>& sigma = grid.sigma;
  // Dropped meshes: the mean of the nearest valid meshes (squared distance in float, as SEP).
  std::vector<float> filled(back);
  for (int64_t py = 0, i = 0; py < ny; ++py) {
    for (int64_t px = 0; px < nx; ++px, ++i) {
      if (back[i] > -backstat::kBig) continue;
      // Reads only valid meshes, whose back and sigma this loop never changes.
      const MeshValue value = fill_dropped_mesh(back.data(), sigma.data(), nx, ny, px, py);
      filled[i] = value.back;
      sigma[i] = value.sigma;
    }
  }
  back = filled;

  // Median filter, the window shrinking symmetrically near the edges.
  const int64_t reach_x = filter_width / 2, reach_y = filter_height / 2;
  std::vector<float> back2(static_cast<size_t>(np)), sigma2(static_cast<size_t>(np));
  std::vector<float> bwin, swin;
  for (int64_t py = 0; py < ny; ++py) {
    const int64_t ry = std::min({reach_y, ny - 1 - py, py});
    for (int64_t px = 0; px < nx; ++px) {
      const int64_t rx = std::min({reach_x, nx - 1 - px, px});
      bwin.clear();
      swin.clear();
      for (int64_t y = py - ry; y <= py + ry; ++y) {
        for (int64_t x = px - rx; x <= px + rx; ++x) {
          bwin.push_back(back[y * nx + x]);
          swin.push_back(sigma[y * nx + x]);
        }
      }
      const int64_t k = py * nx + px;
      const float med = float_median(bwin.data(), static_cast<int64_t>(bwin.size()));
      if (std::fabs(med - back[k]) >= filter_threshold) {
        back2[k] = med;
        sigma2[k] = float_median(swin.data(), static_cast<int64_t>(swin.size()));
      } else {
        back2[k] = back[k];
        sigma2[k] = sigma[k];
      }
    }
  }
  back = back2;
  sigma = sigma2;
  grid.global_back = float_median(back2.data(), np);
  grid.global_rms = float_median(sigma2.data(), np);
  if (grid.global_rms <= 0.0f) {  // sigma2 is sorted: the median of its positive tail, else 1
    int64_t i = np;
    while (i-- && sigma2[static_cast<size_t>(i)] > 0.0f) {
    }
    grid.global_rms = (i >= 0 && i < np - 1) ? float_median(sigma2.data() + i + 1, np - 1 - i) : 1.0f;
  }
}

void spline_second_derivatives(const float* values, int64_t count, int64_t stride, float* second,
                               std::vector<float>& work) {
  work.resize(static_cast<size_t>(std::max<int64_t>(count, 1)));
  spline_second_derivatives(values, count, stride, second, work.data());
}

std::vector<SplineStep> spline_columns(int64_t width, int64_t mesh_width, int64_t nx) {
  std::vector<SplineStep> columns(static_cast<size_t>(width));
  if (nx < 2) return columns;
  const float xstep = static_cast<float>(1.0 / static_cast<double>(mesh_width));
  const int64_t changepoint = mesh_width / 2;
  float dx = (xstep - 1) / 2;
  const float dx0 = static_cast<float>((mesh_width + 1) % 2) * xstep / 2;
  int32_t node = 0;
  for (int64_t j = 0, x = 0, i = 0; j < width; ++j, ++i, dx += xstep) {
    if (i == changepoint && x > 0 && x < nx - 1) {
      ++node;
      dx = dx0;
    }
    columns[static_cast<size_t>(j)] = {node, dx};
    if (i == mesh_width) {
      ++x;
      i = 0;
    }
  }
  return columns;
}

SplineStep spline_row(int64_t y, int64_t mesh_height, int64_t ny) {
  if (ny < 2) return {};
  float dy = static_cast<float>(static_cast<double>(static_cast<float>(y) / static_cast<float>(mesh_height)) - 0.5);
  int32_t yl = static_cast<int32_t>(dy);
  dy -= static_cast<float>(yl);
  if (yl < 0) {
    yl = 0;
    dy = static_cast<float>(dy - 1.0);
  } else if (yl >= ny - 1) {
    yl = static_cast<int32_t>(ny - 2);
    dy = static_cast<float>(dy + 1.0);
  }
  return {yl, dy};
}

MeshGrid mesh_grid(ConstImageView image, const MeshParams& params) {
  MeshGrid grid;
  grid.width = image.width;
  grid.height = image.height;
  grid.mesh_width = params.mesh_width;
  grid.mesh_height = params.mesh_height;
  grid.nx = std::max<int64_t>(1, (image.width - 1) / params.mesh_width + 1);
  grid.ny = std::max<int64_t>(1, (image.height - 1) / params.mesh_height + 1);
  const int64_t np = grid.nx * grid.ny;
  grid.back.resize(static_cast<size_t>(np));
  grid.sigma.resize(static_cast<size_t>(np));
  MeshScratch scratch;
  std::vector<MeshEstimate> row(static_cast<size_t>(grid.nx));
  for (int64_t my = 0; my < grid.ny; ++my) {
    const int64_t y0 = my * params.mesh_height;
    const int64_t h = std::min(params.mesh_height, image.height - y0);
    const float* band = image.data + y0 * image.width;
    std::fill(row.begin(), row.end(), MeshEstimate{});
    if (h > 0 && image.width > 0) {  // the full-width meshes side by side, then a narrower last one
      const int64_t full = image.width / params.mesh_width;
      estimate_meshes(band, image.width, params.mesh_width, h, full, row.data(), scratch);
      if (full < grid.nx) {
        const int64_t x0 = full * params.mesh_width;
        row[static_cast<size_t>(full)] = estimate_mesh(band + x0, image.width, image.width - x0, h, scratch);
      }
    }
    for (int64_t mx = 0; mx < grid.nx; ++mx) {
      const MeshEstimate& e = row[static_cast<size_t>(mx)];
      grid.back[my * grid.nx + mx] = e.back;
      grid.sigma[my * grid.nx + mx] = e.sigma;
      grid.valid += e.valid;
      if (!(e.back > -backstat::kBig)) ++grid.dropped;
    }
  }
  fill_and_filter(grid, params.filter_width, params.filter_height, params.filter_threshold);
  grid.dback.resize(static_cast<size_t>(np));
  grid.dsigma.resize(static_cast<size_t>(np));
  std::vector<float> work;
  for (int64_t x = 0; x < grid.nx; ++x) {
    spline_second_derivatives(grid.back.data() + x, grid.ny, grid.nx, grid.dback.data() + x, work);
    spline_second_derivatives(grid.sigma.data() + x, grid.ny, grid.nx, grid.dsigma.data() + x, work);
  }
  return grid;
}

BackgroundStats mesh_stats(const MeshGrid& grid) {
  BackgroundStats stats;
  stats.median = grid.global_back;
  stats.std = grid.global_rms;
  stats.valid = grid.valid;
  stats.kept = grid.valid;
  stats.meshes = grid.nx * grid.ny;
  stats.meshes_dropped = grid.dropped;
  return stats;
}

namespace {
BackgroundStats empty_image_stats() {
  BackgroundStats stats;
  stats.median = stats.std = std::numeric_limits<double>::quiet_NaN();
  return stats;
}
}  // namespace

BackgroundStats mesh_background(ConstImageView image, const MeshParams& params, std::vector<float>& back_map,
                                std::vector<float>& rms_map) {
  const size_t n = static_cast<size_t>(image.size());
  back_map.resize(n);
  rms_map.resize(n);
  if (n == 0) return empty_image_stats();
  const MeshGrid grid = mesh_grid(image, params);
  MeshRows rows(grid);
  for (int64_t y = 0; y < image.height; ++y) {
    rows.back(y, back_map.data() + y * image.width);
    rows.rms(y, rms_map.data() + y * image.width);
  }
  return mesh_stats(grid);
}

BackgroundStats mesh_background(ConstImageView image, const MeshParams& params, std::vector<float>& back_map,
                                MeshGrid& grid) {
  const size_t n = static_cast<size_t>(image.size());
  back_map.resize(n);
  if (n == 0) {
    grid = MeshGrid{};
    return empty_image_stats();
  }
  grid = mesh_grid(image, params);
  MeshRows rows(grid);
  for (int64_t y = 0; y < image.height; ++y) rows.back(y, back_map.data() + y * image.width);
  return mesh_stats(grid);
}

}  // namespace imflow::kernels
