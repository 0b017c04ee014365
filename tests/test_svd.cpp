// SVD (LAPACKE sgesdd) and rank-k reconstruction: known low-rank matrices of every shape,
// rank-deficient and zero matrices, naive vs blocked kernels, the energy rule, the metrics, the
// svd_reconstruct step's parameters and errors, and an end-to-end run on the real PNG slices.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <random>

#include "imflow/engine.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/png.hpp"
#include "imflow/kernels/reconstruct.hpp"
#include "imflow/kernels/svd.hpp"
#include "imflow/summary.hpp"
#include "test_helpers.hpp"

using namespace imflow;

namespace {
// An m x n matrix of exact rank `rank` (sum of outer products of random vectors).
ImageBuffer low_rank(int64_t m, int64_t n, int rank, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> g;
  std::vector<double> a(static_cast<size_t>(m * n), 0.0);
  for (int r = 0; r < rank; ++r) {
    std::vector<double> u(m), v(n);
    for (auto& x : u) x = g(rng);
    for (auto& x : v) x = g(rng);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) a[i * n + j] += u[i] * v[j];
  }
  ImageBuffer image;
  image.resize(n, m);
  for (size_t i = 0; i < a.size(); ++i) image.data()[i] = static_cast<float>(a[i]);
  return image;
}

double rel_diff(const float* a, const float* b, int64_t count) {
  double d = 0, n = 0;
  for (int64_t i = 0; i < count; ++i) {
    d += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    n += double(b[i]) * b[i];
  }
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

WorkItem item_with(ImageBuffer image) {
  WorkItem item;
  item.pixels = std::move(image);
  return item;
}
}  // namespace

TEST_CASE("low-rank matrices reconstruct exactly at their rank, every shape", "[svd]") {
  struct Shape { int64_t m, n; int rank; };
  for (const Shape s : {Shape{40, 40, 5}, Shape{70, 30, 4}, Shape{25, 90, 6}, Shape{1, 17, 1}, Shape{33, 1, 1}}) {
    INFO(s.m << "x" << s.n << " rank " << s.rank);
    const ImageBuffer a = low_rank(s.m, s.n, s.rank, 7);
    std::vector<float> work;
    const auto f = kernels::svd_thin(a.view(), work);
    CHECK(f.r == std::min(s.m, s.n));
    for (int64_t l = 1; l < f.r; ++l) CHECK(f.s[l] <= f.s[l - 1]);
    if (s.rank < f.r) CHECK(f.s[s.rank] < 1e-5 * f.s[0]);  // numerically zero beyond the rank
    std::vector<float> out(static_cast<size_t>(s.m * s.n));
    kernels::reconstruct_blocked(f, s.rank, out.data(), s.n);
    CHECK(rel_diff(out.data(), a.data(), a.size()) < 1e-5);
    const auto metrics = kernels::reconstruction_metrics(a.view(), {out.data(), s.n, s.m}, f.s, f.r, s.rank);
    CHECK(metrics.rel_frobenius_error < 1e-5);
    CHECK(metrics.energy_kept == Approx(1.0).margin(1e-9));
    CHECK(metrics.compression_ratio == Approx(double(s.rank) * (s.m + s.n + 1) / (s.m * s.n)));
    CHECK(kernels::rank_for_energy(f.s, f.r, 0.999999) <= s.rank);
  }
}

TEST_CASE("naive and blocked reconstruction agree (odd sizes, partial tiles)", "[svd]") {
  const ImageBuffer a = low_rank(77, 601, 40, 3);
  std::vector<float> work;
  const auto f = kernels::svd_thin(a.view(), work);
  for (int64_t k : {0, 1, 13, 64, 65, 77}) {
    std::vector<float> naive(77 * 601, -1.0f), blocked(77 * 601, -2.0f);
    kernels::reconstruct_naive(f, k, naive.data(), 601);
    kernels::reconstruct_blocked(f, k, blocked.data(), 601);
    INFO("k = " << k);
    CHECK(rel_diff(blocked.data(), naive.data(), 77 * 601) < 1e-6);
    if (k == 0) CHECK(*std::max_element(blocked.begin(), blocked.end()) == 0.0f);
  }
}

TEST_CASE("rank-deficient and all-zero matrices", "[svd]") {
  ImageBuffer zero;
  zero.resize(12, 9);
  std::fill(zero.begin(), zero.end(), 0.0f);
  std::vector<float> work;
  const auto f = kernels::svd_thin(zero.view(), work);
  CHECK(f.s[0] == 0.0f);
  CHECK(kernels::rank_for_energy(f.s, f.r, 0.99) == 0);
  std::vector<float> out(12 * 9, 5.0f);
  kernels::reconstruct_blocked(f, 3, out.data(), 12);
  const auto m = kernels::reconstruction_metrics(zero.view(), {out.data(), 12, 9}, f.s, f.r, 3);
  CHECK(m.rel_frobenius_error == 0.0);
  CHECK(m.energy_kept == 1.0);
  CHECK(std::isinf(m.psnr_db));
  // Two identical rows and columns of zeros: rank 2 of a 6 x 5.
  ImageBuffer deficient = low_rank(6, 5, 2, 11);
  const auto g = kernels::svd_thin(deficient.view(), work);
  CHECK(g.s[2] < 1e-5 * g.s[0]);
}

TEST_CASE("the energy rule picks the smallest k reaching the fraction", "[svd]") {
  const float s[] = {4, 2, 1, 1};  // squares 16, 4, 1, 1: total 22
  CHECK(kernels::rank_for_energy(s, 4, 16.0 / 22) == 1);
  CHECK(kernels::rank_for_energy(s, 4, 16.5 / 22) == 2);
  CHECK(kernels::rank_for_energy(s, 4, 21.0 / 22) == 3);
  CHECK(kernels::rank_for_energy(s, 4, 1.0) == 4);
}

TEST_CASE("svd_reconstruct step: metrics, replacement, rank errors and clipping", "[svd]") {
  const auto pipeline = test::pipeline_from("steps: [{svd_reconstruct: {rank: 3}}]");
  WorkItem item = item_with(low_rank(20, 30, 3, 5));
  ImageBuffer original = low_rank(20, 30, 3, 5);
  pipeline.steps[0]->run_cpu(item);
  CHECK(item.metrics.at("rank") == 3);
  CHECK(item.metrics.at("singular_values") == 20);
  CHECK(item.metrics.at("rel_frobenius_error") < 1e-5);
  CHECK(item.metrics.at("psnr_db") > 80);
  CHECK(rel_diff(item.pixels.data(), original.data(), original.size()) < 1e-5);

  const auto too_big = test::pipeline_from("steps: [{svd_reconstruct: {rank: 21}}]");
  WorkItem small = item_with(low_rank(20, 30, 3, 5));
  CHECK_THROWS_WITH(too_big.steps[0]->run_cpu(small), Catch::Contains("rank 21 is larger than min(m, n) = 20"));
  const auto clipped = test::pipeline_from("steps: [{svd_reconstruct: {rank: 500, clip_rank: true}}]");
  clipped.steps[0]->run_cpu(small);
  CHECK(small.metrics.at("rank") == 20);
  CHECK(small.metrics.at("energy_kept") == Approx(1.0));

  const auto energy = test::pipeline_from("steps: [{svd_reconstruct: {energy: 0.9}}]");
  WorkItem e = item_with(low_rank(20, 30, 6, 9));
  energy.steps[0]->run_cpu(e);
  CHECK(e.metrics.at("energy_kept") >= 0.9);
  CHECK(e.metrics.at("rank") <= 6);

  WorkItem with_nan = item_with(low_rank(4, 4, 1, 1));
  with_nan.pixels.data()[5] = NAN;
  CHECK_THROWS_WITH(pipeline.steps[0]->run_cpu(with_nan), Catch::Contains("NaN") && Catch::Contains("nonfinite: zero"));
}

TEST_CASE("svd_reconstruct parameters are validated at pipeline load", "[svd]") {
  CHECK_THROWS_WITH(test::pipeline_from("steps: [svd_reconstruct]"), Catch::Contains("exactly one of rank"));
  CHECK_THROWS_WITH(test::pipeline_from("steps: [{svd_reconstruct: {rank: 5, energy: 0.9}}]"),
                    Catch::Contains("exactly one of rank"));
  CHECK_THROWS_WITH(test::pipeline_from("steps: [{svd_reconstruct: {rank: 0}}]"), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(test::pipeline_from("steps: [{svd_reconstruct: {energy: 1.5}}]"), Catch::Contains("energy"));
  CHECK_THROWS_WITH(test::pipeline_from("steps: [{svd_reconstruct: {rank: 5, solver: tpu}}]"),
                    Catch::Contains("not one of"));
  CHECK_NOTHROW(test::pipeline_from("steps: [{svd_reconstruct: {rank: 5, solver: auto, reconstruct: cpu}}]"));
#ifndef IMFLOW_HAVE_CUDA
  CHECK_THROWS_WITH(test::pipeline_from("steps: [{svd_reconstruct: {rank: 5, solver: gpu}}]"),
                    Catch::Contains("solver") && Catch::Contains("without CUDA"));
  CHECK_THROWS_WITH(test::pipeline_from("steps: [{svd_reconstruct: {rank: 5, reconstruct: gpu}}]"),
                    Catch::Contains("reconstruct") && Catch::Contains("without CUDA"));
#endif
}

TEST_CASE("MRI pipeline end to end: PNG slices in, PNG + metrics.csv out", "[svd][engine]") {
  test::TempDir out("mri_pipeline");
  auto pipeline = test::pipeline_from(
      "input: {dir: " + (test::source_dir() / "datasets/samples/mri").string() +
      "}\noutput: {dir: " + out.path().string() +
      ", formats: [png, metrics]}\ndevice: cpu\nsteps: [normalize, {svd_reconstruct: {rank: 50}}]\n");
  const RunSummary summary = run_pipeline(pipeline, {});
  CHECK(summary.failed() == 0);
  CHECK(summary.succeeded() == 3 + 62);  // three PNG slices, 62 slices of the NIfTI volume
  std::ifstream csv(out / "metrics.csv");
  std::string header, line;
  std::getline(csv, header);
  CHECK(header == "file,slice,rank,rel_frobenius_error,psnr_db,energy_kept,compression_ratio,singular_values,zeroed_pixels");
  int rows = 0;
  while (std::getline(csv, line)) ++rows;
  CHECK(rows == 65);
  CHECK(scan_png(out / "BrainProtonDensitySlice.image.png").bit_depth == 8);
  CHECK(scan_png(out / "inia19_t1_s064_16bit.image.png").bit_depth == 16);
  CHECK(scan_png(out / "KmeansTest_T1UCharRaw.p31.image.png").bit_depth == 16);
  // De-normalized: the reconstruction is back in the original 0..255 range, close to the input.
  ImageBuffer in, rec;
  read_png(test::source_dir() / "datasets/samples/mri/BrainProtonDensitySlice.png", in);
  read_png(out / "BrainProtonDensitySlice.image.png", rec);
  CHECK(rel_diff(rec.data(), in.data(), in.size()) < 0.06);
}
