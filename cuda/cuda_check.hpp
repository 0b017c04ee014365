// The one CUDA error idiom: throwing checks (CUDA runtime, cuBLAS, cuSOLVER) carrying file, line
// and statement, a launch check, and a logging variant for destructors.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#if __has_include(<cublas_api.h>)
#include <cublas_api.h>
#define IMFLOW_HAVE_CUBLAS_HEADERS 1
#endif
#if __has_include(<cusolver_common.h>)
#include <cusolver_common.h>
#define IMFLOW_HAVE_CUSOLVER_HEADERS 1
#endif

namespace imflow::cuda {

// A failed CUDA (or CUDA library) call. what() reads
// "FILE:LINE: STATEMENT: NAME: description".
class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& message, cudaError_t code) : std::runtime_error(message), code_(code) {}
  cudaError_t code() const { return code_; }
  // True for device-memory exhaustion (cudaErrorMemoryAllocation, or a library's ALLOC_FAILED).
  bool out_of_memory() const { return code_ == cudaErrorMemoryAllocation; }

 private:
  cudaError_t code_;
};

// Errors that corrupt the CUDA context: every later call on it fails, the process must restart
// (or at least re-create the primary context) to use the device again.
inline bool is_sticky(cudaError_t code) {
  switch (code) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

namespace detail {

inline std::string where(const char* file, int line, const char* statement) {
  return std::string(file) + ":" + std::to_string(line) + ": " + statement + ": ";
}

inline void check(cudaError_t code, const char* statement, const char* file, int line) {
  if (code == cudaSuccess) return;
  throw CudaError(where(file, line, statement) + cudaGetErrorName(code) + ": " + cudaGetErrorString(code), code);
}

inline void log(cudaError_t code, const char* statement, const char* file, int line) noexcept {
  if (code == cudaSuccess) return;
  std::fprintf(stderr, "imflow: %s:%d: %s: %s: %s\n", file, line, statement, cudaGetErrorName(code),
               cudaGetErrorString(code));
}

#ifdef IMFLOW_HAVE_CUBLAS_HEADERS
inline void check_cublas(cublasStatus_t status, const char* statement, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const cudaError_t code =
      status == CUBLAS_STATUS_ALLOC_FAILED ? cudaErrorMemoryAllocation : cudaErrorUnknown;
  throw CudaError(where(file, line, statement) + cublasGetStatusName(status) + ": " + cublasGetStatusString(status),
                  code);
}
#endif

#ifdef IMFLOW_HAVE_CUSOLVER_HEADERS
inline const char* cusolver_status_name(cusolverStatus_t status) {
  switch (status) {
    case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_MAPPING_ERROR: return "CUSOLVER_STATUS_MAPPING_ERROR";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED: return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case CUSOLVER_STATUS_ZERO_PIVOT: return "CUSOLVER_STATUS_ZERO_PIVOT";
    case CUSOLVER_STATUS_INVALID_LICENSE: return "CUSOLVER_STATUS_INVALID_LICENSE";
    case CUSOLVER_STATUS_INVALID_WORKSPACE: return "CUSOLVER_STATUS_INVALID_WORKSPACE";
    default: return "CUSOLVER_STATUS_(other)";
  }
}

inline void check_cusolver(cusolverStatus_t status, const char* statement, const char* file, int line) {
  if (status == CUSOLVER_STATUS_SUCCESS) return;
  const cudaError_t code =
      status == CUSOLVER_STATUS_ALLOC_FAILED ? cudaErrorMemoryAllocation : cudaErrorUnknown;
  throw CudaError(where(file, line, statement) + cusolver_status_name(status) + " (" +
                      std::to_string(static_cast<int>(status)) + ")",
                  code);
}
#endif

}  // namespace detail
}  // namespace imflow::cuda

#define IMFLOW_CUDA_CHECK(expr) ::imflow::cuda::detail::check((expr), #expr, __FILE__, __LINE__)
#define IMFLOW_CUDA_LOG(expr) ::imflow::cuda::detail::log((expr), #expr, __FILE__, __LINE__)
// After every kernel launch: reports launch-configuration errors without synchronizing.
// cudaGetLastError (not Peek) so that a non-sticky launch error of one item is reported once
// and does not fail the next item launched by this host thread.
#define IMFLOW_CUDA_CHECK_LAUNCH() \
  ::imflow::cuda::detail::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
#ifdef IMFLOW_HAVE_CUBLAS_HEADERS
#define IMFLOW_CUBLAS_CHECK(expr) ::imflow::cuda::detail::check_cublas((expr), #expr, __FILE__, __LINE__)
#endif
#ifdef IMFLOW_HAVE_CUSOLVER_HEADERS
#define IMFLOW_CUSOLVER_CHECK(expr) ::imflow::cuda::detail::check_cusolver((expr), #expr, __FILE__, __LINE__)
#endif
