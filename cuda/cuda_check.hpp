// The one CUDA error idiom: throwing checks carrying file, line and statement, a launch check, and
// a logging variant for destructors (cuBLAS's and cuSOLVER's statuses: cuda/linear_algebra.hpp).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdio>
#include <stdexcept>
#include <string>


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

}  // namespace detail
}  // namespace imflow::cuda

#define IMFLOW_CUDA_CHECK(expr) ::imflow::cuda::detail::check((expr), #expr, __FILE__, __LINE__)
#define IMFLOW_CUDA_LOG(expr) ::imflow::cuda::detail::log((expr), #expr, __FILE__, __LINE__)
// After every kernel launch: reports launch-configuration errors without synchronizing.
// cudaGetLastError (not Peek) so that a non-sticky launch error of one item is reported once
// and does not fail the next item launched by this host thread.
#define IMFLOW_CUDA_CHECK_LAUNCH() \
  ::imflow::cuda::detail::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
