// GPU rank-k SVD reconstruction of one slice (svd_reconstruct's run_cuda): cuSOLVER SVD of the
// image on the slot's stream (gesvdj, gesvd, or a randomized rank-k SVD), the rank (rank: k or the
// energy rule, decided on the device), a reconstruction kernel (cuda/reconstruct.hpp) and the
// metrics, all enqueued without synchronizing; or, for the hybrid, the reconstruction from
// factors computed on the host (Step::prepare_host).
#pragma once
#include <cstdint>
#include <string>

#include "cuda/gpu_context.hpp"
#include "cuda/reconstruct.hpp"

namespace imflow::cuda {

// gesvda and jacobi are the batched solvers (cuda/svd_batched.hpp); the others work per slice.
enum class SvdSolver { gesvdj, gesvd, randomized, gesvda, jacobi };
SvdSolver parse_svd_solver(const std::string& name);  // throws std::invalid_argument
const char* svd_solver_name(SvdSolver solver);

struct SvdOptions {
  SvdSolver solver = SvdSolver::gesvdj;
  ReconstructKernel kernel = ReconstructKernel::register_blocked;
  int64_t rank = 0;       // > 0: rank: k
  double energy = 0.0;    // > 0: energy: f (used when rank == 0)
  bool clip_rank = false;
  int oversampling = 10;  // randomized: sketch of k + p columns
  int power_iterations = 2;
};

// Indices into DeviceResults::svd_metrics, and the item.metrics names of the CPU step.
enum SvdMetric { kRank, kSingularValues, kSigma1, kSigmaK, kRelError, kPsnr, kEnergyKept, kCompression, kSvdMetrics };
extern const char* const kSvdMetricNames[kSvdMetrics];

// svd_status values besides cuSOLVER's info (> 0: gesvd/gesvdj did not converge).
inline constexpr int kSvdNonFinite = -1;  // NaN/Inf pixels (svd_metrics[kRank] holds their count)

// The full GPU path on gpu.image (m = height rows, n = width columns). Throws (before enqueueing
// anything) for a rank above min(m, n) without clip_rank; sets has_svd_metrics, image_modified.
void svd_reconstruct(GpuContext& gpu, const SvdOptions& options);

// The hybrid: `factors` = [U_k column-major m x k | s (all r = min(m, n)) | V_k column-major n x k]
// from the CPU SVD (k already decided); uploads them and reconstructs + measures on the device.
void reconstruct_from_factors(GpuContext& gpu, const float* factors, int64_t k, ReconstructKernel kernel);

// Called by collect_results when has_svd_metrics: metrics into item.metrics, or throws
// std::runtime_error (failing the item) when the SVD failed (non-finite pixels, no convergence).
void collect_svd_metrics(GpuContext& gpu, WorkItem& item);
// The SVD metrics of one result into `item` (throws for non-finite pixels or no convergence);
// shared by the per-item and the batched paths.
void copy_svd_metrics(const DeviceResults& results, WorkItem& item);

// Test/benchmark hooks: the last factors of this slot's SVD (device pointers, valid in stream
// order until the next svd_reconstruct on the slot): U m x r (ld m), s, V n x r (ld n), r.
struct SvdFactorsView {
  const float* u = nullptr;
  const float* s = nullptr;
  const float* v = nullptr;
  int ldu = 0, ldv = 0, r = 0;
};
SvdFactorsView last_factors(const GpuContext& gpu);
// Configure the reconstruction launch shape of this slot (block-size sweep).
void set_reconstruct_config(GpuContext& gpu, const ReconstructConfig& config);

}  // namespace imflow::cuda
