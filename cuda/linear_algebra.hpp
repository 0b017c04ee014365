// cuBLAS and cuSOLVER, opened when first used rather than at process start: loading them (and
// cuBLASLt, cuSPARSE and nvJitLink behind them) costs every imflow process ~0.1 s and ~180 MB of
// memory, and only the GPU SVD steps call them. cublas() and cusolver() give their entry points;
// IMFLOW_CUBLAS_CHECK and IMFLOW_CUSOLVER_CHECK turn their statuses into CudaError.
#pragma once
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <string>

#include "cuda/cuda_check.hpp"

namespace imflow::cuda {

// The cuBLAS functions imflow calls (each as the library exports it).
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&cublasSgeam) sgeam = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

// The cuSOLVER (dense) functions imflow calls.
struct CusolverApi {
  decltype(&cusolverDnCreate) create = nullptr;
  decltype(&cusolverDnDestroy) destroy = nullptr;
  decltype(&cusolverDnSetStream) set_stream = nullptr;
  decltype(&cusolverDnCreateGesvdjInfo) create_gesvdj_info = nullptr;
  decltype(&cusolverDnDestroyGesvdjInfo) destroy_gesvdj_info = nullptr;
  decltype(&cusolverDnSgeqrf_bufferSize) sgeqrf_buffer_size = nullptr;
  decltype(&cusolverDnSgeqrf) sgeqrf = nullptr;
  decltype(&cusolverDnSorgqr_bufferSize) sorgqr_buffer_size = nullptr;
  decltype(&cusolverDnSorgqr) sorgqr = nullptr;
  decltype(&cusolverDnSgesvd_bufferSize) sgesvd_buffer_size = nullptr;
  decltype(&cusolverDnSgesvd) sgesvd = nullptr;
  decltype(&cusolverDnSgesvdj_bufferSize) sgesvdj_buffer_size = nullptr;
  decltype(&cusolverDnSgesvdj) sgesvdj = nullptr;
  decltype(&cusolverDnSgesvdaStridedBatched_bufferSize) sgesvda_strided_batched_buffer_size = nullptr;
  decltype(&cusolverDnSgesvdaStridedBatched) sgesvda_strided_batched = nullptr;
};

// The library's entry points; the first call opens it (thread-safe; a failure is retried on the
// next call). Throws CudaError (cudaErrorSharedObjectInitFailed) naming the library and why when
// it cannot be opened or lacks one of the functions.
const CublasApi& cublas();
const CusolverApi& cusolver();

// Open both now (e.g. on a thread of its own while the devices are set up); a failure is left for
// the first use to report.
void open_linear_algebra() noexcept;

namespace detail {
void check_cublas(cublasStatus_t status, const char* statement, const char* file, int line);
void check_cusolver(cusolverStatus_t status, const char* statement, const char* file, int line);
}  // namespace detail

}  // namespace imflow::cuda

#define IMFLOW_CUBLAS_CHECK(expr) ::imflow::cuda::detail::check_cublas((expr), #expr, __FILE__, __LINE__)
#define IMFLOW_CUSOLVER_CHECK(expr) ::imflow::cuda::detail::check_cusolver((expr), #expr, __FILE__, __LINE__)
