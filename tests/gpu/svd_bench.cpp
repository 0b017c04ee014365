// imflow_svd_bench: the GPU MRI SVD figures (kernels, solvers, hybrid, end to end), as JSON.
//   imflow_svd_bench [--slices DIR] [--json FILE] [--rank K] [--streams N] [--threads T]
// 1. Reconstruction kernels (naive / tiled / register / cublas, block-size sweep): time per
//    launch, GFLOP/s (2 m n k) and GB/s (factors read + image written) for 217x181 k=50 and a
//    large 4096x4096 k=128 (where the kernels, not launch latency, decide).
// 2. Solvers on the slices (PNG directory, min-max normalized; 880 synthetic 217x181 slices when
//    none is given): slices/s of the whole GPU stage (upload, SVD, rank-k reconstruction,
//    metrics, download) for gesvdj / gesvd / randomized over N slots (streams), and of the
//    hybrid (CPU sgesdd on T threads, reconstruction on the GPU).
// 3. Batched solvers (gesvda, jacobi): slices/s of the batched GPU stage (one upload, normalize is
//    not included, SVD + reconstruction + metrics, one download per batch) for batches of
//    16..256 slices on 1 and 4 streams (cuda/svd_batched.hpp).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/gpu_batch.hpp"
#include "cuda/gpu_context.hpp"
#include "cuda/linear_algebra.hpp"
#include "cuda/reconstruct.hpp"
#include "cuda/resources.hpp"
#include "cuda/svd.hpp"
#include "cuda/svd_batched.hpp"
#include "imflow/io/png.hpp"
#include "imflow/kernels/normalize.hpp"
#include "imflow/kernels/svd.hpp"

namespace icuda = imflow::cuda;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

nlohmann::json bench_kernels(int m, int n, int k, int reps) {
  std::mt19937 rng(1);
  std::normal_distribution<float> g;
  std::vector<float> u(static_cast<size_t>(m) * k), v(static_cast<size_t>(n) * k), s(k);
  for (auto& x : u) x = g(rng);
  for (auto& x : v) x = g(rng);
  for (int l = 0; l < k; ++l) s[l] = 1.0f / (1 + l);
  icuda::DeviceBuffer<float> du(u.size()), dv(v.size()), ds(k), dout(static_cast<size_t>(m) * n), scratch(u.size());
  icuda::DeviceBuffer<int> dk(1);
  IMFLOW_CUDA_CHECK(cudaMemcpy(du.data(), u.data(), u.size() * 4, cudaMemcpyHostToDevice));
  IMFLOW_CUDA_CHECK(cudaMemcpy(dv.data(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  IMFLOW_CUDA_CHECK(cudaMemcpy(ds.data(), s.data(), s.size() * 4, cudaMemcpyHostToDevice));
  IMFLOW_CUDA_CHECK(cudaMemcpy(dk.data(), &k, 4, cudaMemcpyHostToDevice));
  icuda::Stream stream;
  cublasHandle_t blas = nullptr;
  IMFLOW_CUBLAS_CHECK(imflow::cuda::cublas().create(&blas));
  IMFLOW_CUBLAS_CHECK(imflow::cuda::cublas().set_stream(blas, stream.get()));
  icuda::ReconstructArgs args{du.data(), m, ds.data(), dv.data(), n, m, n, dk.data(), k, dout.data(), n};
  std::vector<std::tuple<icuda::ReconstructKernel, icuda::ReconstructConfig, std::string>> runs;
  for (auto b : {std::pair{32, 1}, std::pair{32, 4}, std::pair{32, 8}, std::pair{64, 4}, std::pair{128, 2},
                 std::pair{16, 16}, std::pair{32, 32}, std::pair{256, 1}})
    runs.push_back({icuda::ReconstructKernel::naive, {b.first, b.second, 0, -1},
                    std::to_string(b.first) + "x" + std::to_string(b.second)});
  for (int t : {8, 16, 32}) runs.push_back({icuda::ReconstructKernel::tiled, {0, 0, t, -1}, "tile" + std::to_string(t)});
  for (int var = 0; var < icuda::register_variants(); ++var)
    runs.push_back({icuda::ReconstructKernel::register_blocked, {0, 0, 0, var}, icuda::register_variant_name(var)});
  runs.push_back({icuda::ReconstructKernel::cublas, {}, "sgemm"});
  const double flops = 2.0 * m * n * k;
  const double bytes = 4.0 * (static_cast<double>(m) * k + static_cast<double>(n) * k + k + static_cast<double>(m) * n);
  nlohmann::json out = nlohmann::json::array();
  icuda::Event start(true), stop(true);
  for (const auto& [kernel, config, label] : runs) {
    for (int w = 0; w < 5; ++w) icuda::reconstruct(kernel, args, stream, blas, scratch.data(), config);
    start.record(stream);
    for (int r = 0; r < reps; ++r) icuda::reconstruct(kernel, args, stream, blas, scratch.data(), config);
    stop.record(stream);
    stop.synchronize();
    const double sec = icuda::Event::elapsed_ms(start, stop) * 1e-3 / reps;
    out.push_back({{"kernel", icuda::reconstruct_kernel_name(kernel)},
                   {"config", label},
                   {"m", m},
                   {"n", n},
                   {"k", k},
                   {"us_per_launch", sec * 1e6},
                   {"gflops", flops / sec * 1e-9},
                   {"gbs", bytes / sec * 1e-9}});
    std::printf("  reconstruct %4dx%-4d k %3d %-9s %-16s %9.2f us %9.1f GFLOP/s %8.1f GB/s\n", m, n, k,
                icuda::reconstruct_kernel_name(kernel), label.c_str(), sec * 1e6, flops / sec * 1e-9, bytes / sec * 1e-9);
  }
  imflow::cuda::cublas().destroy(blas);
  return out;
}

struct Slices {
  std::vector<std::vector<float>> data;
  int64_t m = 217, n = 181;
  std::string source;
};

Slices load_slices(const std::string& dir) {
  Slices s;
  if (!dir.empty() && fs::is_directory(dir)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".png") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      imflow::ImageBuffer image;
      imflow::read_png(f, image);
      if (!s.data.empty() && (image.height() != s.m || image.width() != s.n)) continue;
      s.m = image.height();
      s.n = image.width();
      std::vector<float> a(image.data(), image.data() + s.m * s.n);
      imflow::kernels::normalize({a.data(), s.n, s.m}, imflow::kernels::NormalizeMethod::minmax);
      s.data.push_back(std::move(a));
    }
    s.source = dir;
  }
  if (s.data.empty()) {  // synthetic: smooth blobs + noise, 880 slices 217x181
    std::mt19937 rng(2);
    std::normal_distribution<float> g(0.0f, 0.02f);
    for (int i = 0; i < 880; ++i) {
      std::vector<float> a(static_cast<size_t>(s.m * s.n));
      for (int64_t y = 0; y < s.m; ++y)
        for (int64_t x = 0; x < s.n; ++x) {
          const double dx = (x - 90.0) / 60.0, dy = (y - 108.0) / 80.0;
          a[y * s.n + x] = static_cast<float>(std::max(0.0, 1.0 - dx * dx - dy * dy) * (0.6 + 0.3 * std::sin(0.1 * x + i)) + g(rng));
        }
      s.data.push_back(std::move(a));
    }
    s.source = "synthetic";
  }
  return s;
}

struct BenchSlot {
  icuda::Stream stream;
  std::unique_ptr<imflow::GpuContext> gpu;
  std::unique_ptr<imflow::WorkItem> item;
  std::vector<float> factors;
  int64_t k = 0;
};

// The GPU stage over all slices with `streams` slots (each: upload, step, download; a slot is
// reused once its stream is done), like the engine's GPU node. Returns slices/s.
template <typename Enqueue>
double run_gpu_stage(std::vector<BenchSlot>& slots, const Slices& slices, int passes, Enqueue&& enqueue,
                     size_t limit = SIZE_MAX) {
  const size_t count = std::min(limit, slices.data.size());
  auto t0 = Clock::now();
  for (int p = 0; p < passes; ++p) {
    for (size_t i = 0; i < count; ++i) {
      BenchSlot& slot = slots[i % slots.size()];
      slot.stream.synchronize();
      if (i >= slots.size() || p > 0) icuda::collect_results(*slot.gpu, *slot.item);
      std::memcpy(slot.item->pixels.data(), slices.data[i].data(), slices.data[i].size() * sizeof(float));
      icuda::enqueue_upload(*slot.gpu, *slot.item);
      enqueue(slot, i);
      icuda::DownloadWants wants;
      wants.pixels = true;
      icuda::enqueue_download(*slot.gpu, wants);
    }
  }
  for (auto& slot : slots) slot.stream.synchronize();
  return static_cast<double>(count) * passes / seconds_since(t0);
}

// The batched GPU stage over all slices: batches of `batch` (the last one partial) round-robin
// over `streams` GpuBatch slots, each reused once its stream is done. Returns slices/s.
double run_batched_stage(const Slices& slices, std::vector<std::unique_ptr<imflow::WorkItem>>& items, int batch,
                         int streams, const icuda::SvdOptions& options, int passes) {
  std::vector<icuda::Stream> stream_pool(static_cast<size_t>(streams));
  std::vector<std::unique_ptr<imflow::GpuBatch>> batches;
  for (auto& stream : stream_pool) batches.push_back(std::make_unique<imflow::GpuBatch>(0, stream.get()));
  std::vector<imflow::WorkItem*> pointers;
  for (auto& item : items) pointers.push_back(item.get());
  const int total = static_cast<int>(slices.data.size());
  auto pass = [&] {
    int slot = 0;
    for (int first = 0; first < total; first += batch, slot = (slot + 1) % streams) {
      const int count = std::min(batch, total - first);
      imflow::GpuBatch& b = *batches[static_cast<size_t>(slot)];
      stream_pool[static_cast<size_t>(slot)].synchronize();
      icuda::enqueue_batch_upload(b, pointers.data() + first, count);
      icuda::SvdBatchJob job{b.images.data(), b.spare.data(), static_cast<int>(slices.m), static_cast<int>(slices.n),
                             count, b.results.data()};
      icuda::svd_reconstruct_batched(b.svd, b.stream, b.max_shared_optin, options, job);
      swap(b.images, b.spare);
      b.image_modified = b.has_svd_metrics = true;
      icuda::enqueue_batch_download(b, pointers.data() + first, count);
    }
    for (auto& stream : stream_pool) stream.synchronize();
  };
  pass();  // warm-up: handles, workspaces, buffers
  auto t0 = Clock::now();
  for (int p = 0; p < passes; ++p) pass();
  return static_cast<double>(total) * passes / seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, json_path = "svd_bench.json";
  int rank = 50, threads = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<int> stream_counts = {1, 4, 8, 16};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--slices") dir = argv[i + 1];
    else if (a == "--json") json_path = argv[i + 1];
    else if (a == "--rank") rank = std::atoi(argv[i + 1]);
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--streams") stream_counts = {std::atoi(argv[i + 1])};
  }
  if (icuda::device_count() == 0) {
    std::printf("no CUDA device\n");
    return 77;
  }
  nlohmann::json report;
  report["device"] = icuda::device_name(0);
  report["host_threads"] = threads;
  std::printf("device %s\nreconstruction kernels:\n", icuda::device_name(0).c_str());
  report["reconstruct_kernels"] = bench_kernels(217, 181, 50, 2000);
  report["reconstruct_kernels_large"] = bench_kernels(4096, 4096, 128, 20);

  const Slices slices = load_slices(dir);
  report["slices"] = {{"source", slices.source}, {"count", slices.data.size()}, {"m", slices.m}, {"n", slices.n}, {"rank", rank}};
  std::printf("slices: %zu of %ldx%ld from %s, rank %d\n", slices.data.size(), (long)slices.n, (long)slices.m,
              slices.source.c_str(), rank);
  nlohmann::json solvers = nlohmann::json::array();
  for (int streams : stream_counts) {
    std::vector<BenchSlot> slots(static_cast<size_t>(streams));
    for (auto& slot : slots) {
      slot.gpu = std::make_unique<imflow::GpuContext>(0, slot.stream.get());
      slot.item = std::make_unique<imflow::WorkItem>();
      slot.item->pixels.set_allocator(icuda::pinned_allocator());
      slot.item->pixels.resize(slices.n, slices.m);
    }
    for (auto solver : {icuda::SvdSolver::gesvdj, icuda::SvdSolver::gesvd, icuda::SvdSolver::randomized}) {
      if (solver == icuda::SvdSolver::gesvd && streams != 4) continue;  // slow; 4 streams tell enough
      for (auto kernel : {icuda::ReconstructKernel::register_blocked, icuda::ReconstructKernel::cublas}) {
        if (solver != icuda::SvdSolver::gesvdj && kernel == icuda::ReconstructKernel::cublas) continue;
        icuda::SvdOptions options;
        options.solver = solver;
        options.kernel = kernel;
        options.rank = rank;
        auto enqueue = [&](BenchSlot& slot, size_t) { icuda::svd_reconstruct(*slot.gpu, options); };
        const int passes = solver == icuda::SvdSolver::gesvd ? 1 : 2;
        run_gpu_stage(slots, slices, 1, enqueue, 4 * slots.size() + 16);  // warm-up (handles, workspaces)
        const double rate = run_gpu_stage(slots, slices, passes, enqueue);
        solvers.push_back({{"mode", "gpu"}, {"solver", icuda::svd_solver_name(solver)},
                           {"kernel", icuda::reconstruct_kernel_name(kernel)}, {"streams", streams}, {"slices_per_s", rate}});
        std::printf("  gpu stage  %-10s %-8s streams %2d: %9.1f slices/s\n", icuda::svd_solver_name(solver),
                    icuda::reconstruct_kernel_name(kernel), streams, rate);
      }
    }
  }
  // Batched solvers: every slice once per pass, batches of 16..256 on 1 and 4 streams.
  {
    std::vector<std::unique_ptr<imflow::WorkItem>> items;
    for (const auto& slice : slices.data) {
      items.push_back(std::make_unique<imflow::WorkItem>());
      items.back()->pixels.set_allocator(icuda::pinned_allocator());
      items.back()->pixels.resize(slices.n, slices.m);
      std::memcpy(items.back()->pixels.data(), slice.data(), slice.size() * sizeof(float));
    }
    for (auto solver : {icuda::SvdSolver::gesvda, icuda::SvdSolver::jacobi}) {
      for (int streams : {1, 4}) {
        for (int batch : {16, 32, 64, 128, 256}) {
          icuda::SvdOptions options;
          options.solver = solver;
          options.kernel = icuda::ReconstructKernel::tiled;
          options.rank = rank;
          const double rate = run_batched_stage(slices, items, batch, streams, options, 2);
          solvers.push_back({{"mode", "gpu_batched"}, {"solver", icuda::svd_solver_name(solver)}, {"kernel", "tiled"},
                             {"streams", streams}, {"batch", batch}, {"slices_per_s", rate}});
          std::printf("  batched    %-10s tiled    streams %2d batch %3d: %9.1f slices/s\n", icuda::svd_solver_name(solver),
                      streams, batch, rate);
        }
      }
    }
  }
  // Hybrid: CPU sgesdd on `threads` threads (the host phase), then reconstruction on the GPU.
  {
    std::vector<std::vector<float>> factors(slices.data.size());
    std::atomic<size_t> next{0};
    auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        std::vector<float> work;
        for (size_t i = next++; i < slices.data.size(); i = next++) {
          const auto f = imflow::kernels::svd_thin({slices.data[i].data(), slices.n, slices.m}, work);
          const int64_t m = f.m, n = f.n, r = f.r, k = rank;
          auto& out = factors[i];
          out.resize(static_cast<size_t>(m * k + r + n * k));
          for (int64_t y = 0; y < m; ++y)
            for (int64_t l = 0; l < k; ++l) out[y + l * m] = f.u[y * f.ldu + l];
          std::copy(f.s, f.s + r, out.begin() + m * k);
          for (int64_t l = 0; l < k; ++l) std::copy(f.vt + l * f.ldvt, f.vt + l * f.ldvt + n, out.begin() + m * k + r + l * n);
        }
      });
    for (auto& th : pool) th.join();
    const double cpu_rate = static_cast<double>(slices.data.size()) / seconds_since(t0);
    std::vector<BenchSlot> slots(4);
    for (auto& slot : slots) {
      slot.gpu = std::make_unique<imflow::GpuContext>(0, slot.stream.get());
      slot.item = std::make_unique<imflow::WorkItem>();
      slot.item->pixels.set_allocator(icuda::pinned_allocator());
      slot.item->pixels.resize(slices.n, slices.m);
    }
    auto enqueue = [&](BenchSlot& slot, size_t i) {
      icuda::reconstruct_from_factors(*slot.gpu, factors[i].data(), rank, icuda::ReconstructKernel::register_blocked);
    };
    run_gpu_stage(slots, slices, 1, enqueue, 32);
    const double gpu_rate = run_gpu_stage(slots, slices, 3, enqueue);
    solvers.push_back({{"mode", "hybrid"}, {"solver", "lapack_sgesdd"}, {"cpu_threads", threads},
                       {"cpu_svd_slices_per_s", cpu_rate}, {"gpu_reconstruct_slices_per_s", gpu_rate},
                       {"slices_per_s", std::min(cpu_rate, gpu_rate)}});
    std::printf("  hybrid: CPU sgesdd on %d threads %9.1f slices/s, GPU reconstruction (4 streams) %9.1f slices/s\n",
                threads, cpu_rate, gpu_rate);
  }
  report["solvers"] = solvers;
  std::ofstream(json_path) << report.dump(2) << "\n";
  std::printf("wrote %s\n", json_path.c_str());
  return 0;
}
