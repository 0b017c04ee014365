// Helpers of the GPU MRI tests (test_gpu_svd*.cpp, test_gpu_normalize_batched.cpp,
// test_gpu_batch_mode.cpp): items through a slot, matrices of known spectrum, the CPU reference
// path, real slice lists, metrics.csv rows.
#pragma once
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "cuda/gpu_context.hpp"
#include "cuda/svd.hpp"
#include "gpu_test_helpers.hpp"
#include "imflow/kernels/reconstruct.hpp"
#include "imflow/kernels/svd.hpp"

namespace svd_test {

using gpu_test::Slot;
using imflow::WorkItem;
namespace icuda = imflow::cuda;
namespace fs = std::filesystem;


inline void set_pixels(WorkItem& item, int64_t width, int64_t height, const std::vector<float>& values) {
  item.reset({});
  gpu_test::make_pinned(item, width, height);
  std::copy(values.begin(), values.end(), item.pixels.data());
}

// Upload, enqueue `steps`, download, wait, collect: one item through a slot like the engine.
template <typename F>
void run_on_gpu(Slot& slot, WorkItem& item, F&& steps) {
  icuda::enqueue_upload(slot.gpu, item);
  steps(slot.gpu);
  icuda::DownloadWants wants;
  wants.pixels = slot.gpu.image_modified;
  icuda::enqueue_download(slot.gpu, wants);
  slot.stream.synchronize();
  icuda::collect_results(slot.gpu, item);
}

using gpu_test::rel_diff;

// An m x n row-major matrix with singular values `sigma` (random orthonormal factors, double).
inline std::vector<float> known_spectrum(int64_t m, int64_t n, const std::vector<double>& sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> g;
  const int64_t r = static_cast<int64_t>(sigma.size());
  auto orthonormal = [&](int64_t rows) {  // rows x r, columns orthonormal (Gram-Schmidt twice)
    std::vector<double> q(static_cast<size_t>(rows * r));
    for (auto& x : q) x = g(rng);
    for (int64_t c = 0; c < r; ++c)
      for (int pass = 0; pass < 2; ++pass) {
        for (int64_t p = 0; p < c; ++p) {
          double dot = 0.0;
          for (int64_t i = 0; i < rows; ++i) dot += q[i * r + c] * q[i * r + p];
          for (int64_t i = 0; i < rows; ++i) q[i * r + c] -= dot * q[i * r + p];
        }
        double norm = 0.0;
        for (int64_t i = 0; i < rows; ++i) norm += q[i * r + c] * q[i * r + c];
        norm = std::sqrt(norm);
        for (int64_t i = 0; i < rows; ++i) q[i * r + c] /= norm;
      }
    return q;
  };
  const auto u = orthonormal(m), v = orthonormal(n);
  std::vector<float> a(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t l = 0; l < r; ++l) acc += u[i * r + l] * sigma[l] * v[j * r + l];
      a[i * n + j] = static_cast<float>(acc);
    }
  return a;
}

// The CPU path of svd_reconstruct (sgesdd + blocked reconstruction + metrics).
struct CpuSvd {
  std::vector<float> s, recon;
  double rel_error = 0.0, psnr = 0.0, energy = 0.0;
};
inline CpuSvd cpu_svd(const std::vector<float>& a, int64_t m, int64_t n, int64_t k) {
  CpuSvd out;
  std::vector<float> work;
  const auto f = imflow::kernels::svd_thin({a.data(), n, m}, work);
  out.s.assign(f.s, f.s + f.r);
  out.recon.resize(static_cast<size_t>(m * n));
  imflow::kernels::reconstruct_blocked(f, k, out.recon.data(), n);
  const auto metrics = imflow::kernels::reconstruction_metrics({a.data(), n, m}, {out.recon.data(), n, m}, f.s, f.r, k);
  out.rel_error = metrics.rel_frobenius_error;
  out.psnr = metrics.psnr_db;
  out.energy = metrics.energy_kept;
  return out;
}

inline std::vector<float> download(const float* device, size_t n, cudaStream_t stream) {
  std::vector<float> host(n);
  if (n > 0) IMFLOW_CUDA_CHECK(cudaMemcpyAsync(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  IMFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

struct SvdCheck {
  double max_sv_rel = 0.0;    // max over l < k of |s_gpu - s_ref| / s_ref (s_ref > 1e-3 s_1)
  double err_diff = 0.0;      // |rel_error_gpu - rel_error_ref|
  double pixel_rel = 0.0;     // ||recon_gpu - recon_ref|| / ||recon_ref||
};

// The GPU SVD (per-slice path, cuda::svd_reconstruct) of `a` against reference singular values and the CPU reconstruction.
inline SvdCheck check_gpu_svd(Slot& slot, const std::vector<float>& a, int64_t m, int64_t n, int64_t k, icuda::SvdSolver solver,
                       const std::vector<double>& s_ref, double err_ref, const std::vector<float>& recon_ref,
                       icuda::ReconstructKernel kernel = icuda::ReconstructKernel::register_blocked) {
  WorkItem item;
  set_pixels(item, n, m, a);
  icuda::SvdOptions options;
  options.solver = solver;
  options.kernel = kernel;
  options.rank = k;
  run_on_gpu(slot, item, [&](imflow::GpuContext& gpu) { icuda::svd_reconstruct(gpu, options); });
  REQUIRE(item.metrics.count("rel_frobenius_error") == 1);
  const auto view = icuda::last_factors(slot.gpu);
  const auto s = download(view.s, static_cast<size_t>(std::min<int64_t>(k, view.r)), slot.stream.get());
  SvdCheck c;
  const double s1 = s_ref.empty() ? 0.0 : s_ref[0];
  for (int64_t l = 0; l < k && l < static_cast<int64_t>(s_ref.size()); ++l) {
    if (s_ref[l] > 1e-3 * s1) c.max_sv_rel = std::max(c.max_sv_rel, std::abs(s[l] - s_ref[l]) / s_ref[l]);
    else c.max_sv_rel = std::max(c.max_sv_rel, std::abs(s[l] - s_ref[l]) / std::max(s1, 1e-30));
  }
  CHECK(item.metrics["rank"] == k);
  CHECK(item.metrics["singular_values"] == std::min(m, n));
  c.err_diff = std::abs(item.metrics["rel_frobenius_error"] - err_ref);
  c.pixel_rel = rel_diff(item.pixels.data(), recon_ref.data(), recon_ref.size());
  return c;
}

inline std::vector<fs::path> png_files(const fs::path& dir, size_t step) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".png") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<fs::path> picked;
  for (size_t i = 0; i < files.size(); i += step) picked.push_back(files[i]);
  return picked;
}

// metrics.csv rows keyed by "file,slice" -> rel_frobenius_error, psnr_db, energy_kept.
inline std::map<std::string, std::vector<double>> read_metrics_csv(const fs::path& path) {
  std::map<std::string, std::vector<double>> rows;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (cells.size() < 8) continue;
    // rank, relative error, energy kept, zeroed pixels (normalize nonfinite: zero)
    rows[cells[0] + "," + cells[1]] = {std::stod(cells[2]), std::stod(cells[3]), std::stod(cells[5]),
                                       cells.size() > 8 ? std::stod(cells[8]) : 0.0};
  }
  return rows;
}
}  // namespace svd_test
