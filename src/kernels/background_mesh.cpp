// The SExtractor/SEP mesh background on the CPU (see include/imflow/kernels/background_mesh.hpp).
// Arithmetic follows SEP's background.c type for type (float where SEP stores floats, double
// sums), so that the maps agree with sep.Background to float rounding.
#include "imflow/kernels/background_mesh.hpp"
#include "imflow/kernels/mesh_fill.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace imflow::kernels {

namespace {

constexpr double kBig = 1e30;              // SEP's BIG
constexpr double kMinGoodFraction = 0.5;   // BACK_MINGOODFRAC
constexpr int kHistogramSigmas = 5;        // QUANTIF_NSIGMA
constexpr int64_t kMaxLevels = 4096;       // QUANTIF_NMAXLEVELS
constexpr int kModePixels = 4;             // QUANTIF_AMIN
constexpr double kPi = 3.1415926535898;    // SEP's PI (sepcore.h)

bool usable(float v) { return std::isfinite(v) && v > -kBig; }

// Median of n floats as SEP's fqmedian (mean of the middle two, in float). Reorders the values
// (ascending, NaN last).
float float_median(float* values, int64_t n) {
  std::sort(values, values + n, [](float a, float b) { return a < b || (!std::isnan(a) && std::isnan(b)); });
  if (n < 2) return values[0];
  return (n & 1) ? values[n / 2] : static_cast<float>((values[n / 2 - 1] + values[n / 2]) / 2.0);
}

// SEP's backguess on a histogram of nlevels bins: the clipped mode and sigma in bin units,
// converted with qzero/qscale. mean_f is the mesh's clipped mean (float, as SEP stores it).
MeshEstimate histogram_mode(const int32_t* histo, int64_t nlevels, float mean_f, float sigma_f, float qzero,
                            float qscale) {
  (void)sigma_f;
  const int64_t top = nlevels - 1;
  int64_t lcut = 0, hcut = top;
  double sig = 10.0 * static_cast<double>(top), sig1 = 1.0;
  double mea = mean_f, med = mean_f;
  for (int n = 100; n-- && sig >= 0.1 && std::fabs(sig / sig1 - 1.0) > 1e-4;) {
    sig1 = sig;
    uint64_t sum = 0, lowsum = 0, highsum = 0;
    mea = sig = 0.0;
    int64_t lo = lcut, hi = hcut;
    for (int64_t i = lcut; i <= hcut; ++i) {
      if (lowsum < highsum) lowsum += static_cast<uint64_t>(histo[lo++]);
      else highsum += static_cast<uint64_t>(histo[hi--]);
      const int64_t pix = histo[i];
      sum += static_cast<uint64_t>(pix);
      const double dpix = static_cast<double>(pix) * static_cast<double>(i);
      mea += dpix;
      sig += dpix * static_cast<double>(i);
    }
    med = hi >= 0 ? (static_cast<double>(hi) + 0.5 +
                     (static_cast<double>(highsum) - static_cast<double>(lowsum)) /
                         (2.0 * static_cast<double>(histo[lo] > histo[hi] ? histo[lo] : histo[hi])))
                  : 0.0;
    if (sum != 0) {
      mea /= static_cast<double>(sum);
      sig = sig / static_cast<double>(sum) - mea * mea;
    }
    sig = sig > 0.0 ? std::sqrt(sig) : 0.0;
    double cut = med - 3.0 * sig;
    lcut = cut > 0.0 ? static_cast<int64_t>(cut + 0.5) : 0;
    cut = med + 3.0 * sig;
    hcut = cut < static_cast<double>(top) ? static_cast<int64_t>(cut > 0.0 ? cut + 0.5 : cut - 0.5) : top;
  }
  MeshEstimate e;
  const double mode = std::fabs(sig) > 0.0
                          ? (std::fabs((mea - med) / sig) < 0.3 ? qzero + (2.5 * med - 1.5 * mea) * qscale
                                                                : qzero + med * qscale)
                          : qzero + mea * qscale;
  e.back = static_cast<float>(mode);
  e.sigma = static_cast<float>(sig * qscale);
  return e;
}

}  // namespace

MeshEstimate estimate_mesh(const float* origin, int64_t stride, int64_t w, int64_t h, std::vector<int32_t>& histogram) {
  // backstat: mean and sigma of the valid pixels, then again inside mean +- 2 sigma.
  double sum = 0.0, squares = 0.0;
  int64_t n = 0;
  for (int64_t y = 0; y < h; ++y) {
    const float* row = origin + y * stride;
    for (int64_t x = 0; x < w; ++x) {
      if (!usable(row[x])) continue;
      const double v = row[x];
      sum += v;
      squares += v * v;
      ++n;
    }
  }
  MeshEstimate dropped;
  dropped.valid = n;
  if (static_cast<float>(n) < static_cast<float>(static_cast<double>(w * h) * kMinGoodFraction)) return dropped;
  double mean = sum / static_cast<double>(n);
  double var = squares / static_cast<double>(n) - mean * mean;
  double sigma = var > 0.0 ? std::sqrt(var) : 0.0;
  const float lcut = static_cast<float>(mean - 2.0 * sigma), hcut = static_cast<float>(mean + 2.0 * sigma);
  sum = squares = 0.0;
  int64_t kept = 0;
  for (int64_t y = 0; y < h; ++y) {
    const float* row = origin + y * stride;
    for (int64_t x = 0; x < w; ++x) {
      const float v = row[x];
      if (!(v <= hcut && v >= lcut)) continue;
      sum += static_cast<double>(v);
      squares += static_cast<double>(v) * static_cast<double>(v);
      ++kept;
    }
  }
  mean = sum / static_cast<double>(kept);
  var = squares / static_cast<double>(kept) - mean * mean;
  sigma = var > 0.0 ? std::sqrt(var) : 0.0;
  const double step = std::sqrt(2.0 / kPi) * kHistogramSigmas / kModePixels;
  int64_t nlevels = static_cast<int64_t>(static_cast<int>(step * static_cast<double>(kept) + 1));
  if (nlevels > kMaxLevels) nlevels = kMaxLevels;
  const float qscale = sigma > 0.0 ? static_cast<float>(2 * kHistogramSigmas * sigma / static_cast<double>(nlevels)) : 1.0f;
  const float qzero = static_cast<float>(mean - kHistogramSigmas * sigma);

  // backhisto: every pixel whose bin falls in [0, nlevels) (NaN never does).
  histogram.assign(static_cast<size_t>(nlevels), 0);
  const float cste = static_cast<float>(0.499999 - static_cast<double>(qzero / qscale));
  const float levels = static_cast<float>(nlevels);
  for (int64_t y = 0; y < h; ++y) {
    const float* row = origin + y * stride;
    for (int64_t x = 0; x < w; ++x) {
      const float f = row[x] / qscale + cste;
      if (f > -1.0f && f < levels) ++histogram[static_cast<size_t>(static_cast<int64_t>(f))];
    }
  }
  MeshEstimate e = histogram_mode(histogram.data(), nlevels, static_cast<float>(mean), static_cast<float>(sigma),
                                  qzero, qscale);
  e.valid = n;
  return e;
}

void fill_and_filter(MeshGrid& grid, int64_t filter_width, int64_t filter_height, double filter_threshold) {
  const int64_t nx = grid.nx, ny = grid.ny, np = nx * ny;
  std::vector<float>& back = grid.back;
  std::vector<float>& sigma = grid.sigma;
  // Dropped meshes: the mean of the nearest valid meshes (squared distance in float, as SEP).
  std::vector<float> filled(back);
  for (int64_t py = 0, i = 0; py < ny; ++py) {
    for (int64_t px = 0; px < nx; ++px, ++i) {
      if (back[i] > -kBig) continue;
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
  if (count < 2) {
    if (count == 1) second[0] = 0.0f;
    return;
  }
  work.assign(static_cast<size_t>(count), 0.0f);
  float* u = work.data();
  second[0] = u[0] = 0.0f;
  for (int64_t k = 1; k < count - 1; ++k) {
    float temp = -1 / (second[(k - 1) * stride] + 4);
    second[k * stride] = temp;
    temp *= u[k - 1] - 6 * (values[(k + 1) * stride] + values[(k - 1) * stride] - 2 * values[k * stride]);
    u[k] = temp;
  }
  second[(count - 1) * stride] = 0.0f;
  for (int64_t k = count - 2; k >= 1; --k) {
    second[k * stride] = static_cast<float>((second[k * stride] * second[(k + 1) * stride] + u[k]) / 6.0);
  }
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

void interpolate_row(const MeshGrid& grid, const std::vector<float>& values, const std::vector<float>& second,
                     const std::vector<SplineStep>& columns, int64_t y, float* out, std::vector<float>& nodes,
                     std::vector<float>& work) {
  const int64_t nbx = grid.nx, nby = grid.ny;
  const float* node;
  const float* dnode;
  if (nby > 1) {
    const SplineStep row = spline_row(y, grid.mesh_height, nby);
    const float dy = row.d, cdy = 1 - dy;
    const float dy3 = dy * dy * dy - dy, cdy3 = cdy * cdy * cdy - cdy;
    const float* blo = values.data() + row.node * nbx;
    const float* bhi = blo + nbx;
    const float* dblo = second.data() + row.node * nbx;
    const float* dbhi = dblo + nbx;
    nodes.resize(static_cast<size_t>(2 * nbx));
    for (int64_t x = 0; x < nbx; ++x) nodes[x] = cdy * blo[x] + dy * bhi[x] + cdy3 * dblo[x] + dy3 * dbhi[x];
    spline_second_derivatives(nodes.data(), nbx, 1, nodes.data() + nbx, work);
    node = nodes.data();
    dnode = nodes.data() + nbx;
  } else {  // one row of meshes: SEP uses the nodes as they are and their (zero) y derivatives
    node = values.data();
    dnode = second.data();
  }
  if (nbx > 1) {
    for (int64_t x = 0; x < grid.width; ++x) {
      const SplineStep c = columns[static_cast<size_t>(x)];
      const float dx = c.d, cdx = 1 - dx;
      const float blo = node[c.node], bhi = node[c.node + 1], dblo = dnode[c.node], dbhi = dnode[c.node + 1];
      out[x] = cdx * (blo + (cdx * cdx - 1) * dblo) + dx * (bhi + (dx * dx - 1) * dbhi);
    }
  } else {
    std::fill(out, out + grid.width, node[0]);
  }
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
  std::vector<int32_t> histogram;
  for (int64_t my = 0; my < grid.ny; ++my) {
    const int64_t y0 = my * params.mesh_height;
    const int64_t h = std::min(params.mesh_height, image.height - y0);
    for (int64_t mx = 0; mx < grid.nx; ++mx) {
      const int64_t x0 = mx * params.mesh_width;
      const int64_t w = std::min(params.mesh_width, image.width - x0);
      MeshEstimate e;
      if (w > 0 && h > 0) e = estimate_mesh(image.data + y0 * image.width + x0, image.width, w, h, histogram);
      grid.back[my * grid.nx + mx] = e.back;
      grid.sigma[my * grid.nx + mx] = e.sigma;
      grid.valid += e.valid;
      if (!(e.back > -kBig)) ++grid.dropped;
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

BackgroundStats mesh_background(ConstImageView image, const MeshParams& params, std::vector<float>& back_map,
                                std::vector<float>& rms_map) {
  const size_t n = static_cast<size_t>(image.size());
  back_map.resize(n);
  rms_map.resize(n);
  BackgroundStats stats;
  if (n == 0) {
    stats.median = stats.std = std::numeric_limits<double>::quiet_NaN();
    return stats;
  }
  const MeshGrid grid = mesh_grid(image, params);
  const std::vector<SplineStep> columns = spline_columns(image.width, params.mesh_width, grid.nx);
  std::vector<float> nodes, work;
  for (int64_t y = 0; y < image.height; ++y) {
    interpolate_row(grid, grid.back, grid.dback, columns, y, back_map.data() + y * image.width, nodes, work);
    interpolate_row(grid, grid.sigma, grid.dsigma, columns, y, rms_map.data() + y * image.width, nodes, work);
  }
  stats.median = grid.global_back;
  stats.std = grid.global_rms;
  stats.valid = grid.valid;
  stats.kept = grid.valid;
  stats.meshes = grid.nx * grid.ny;
  stats.meshes_dropped = grid.dropped;
  return stats;
}

}  // namespace imflow::kernels
