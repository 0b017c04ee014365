// cuBLAS and cuSOLVER opened on first use (linear_algebra.hpp). The sonames and the build's paths
// come from CMake (IMFLOW_CUBLAS_SONAME, IMFLOW_CUBLAS_PATH, likewise for cuSOLVER): the soname
// is looked up as the dynamic loader would (LD_LIBRARY_PATH, the binary's run path, the system),
// then the file the build linked against.
#include "cuda/linear_algebra.hpp"

#include <dlfcn.h>

#include <string>

namespace imflow::cuda {

namespace {
class SharedLibrary {
 public:
  SharedLibrary(const char* soname, const char* build_path) : soname_(soname) {
    handle_ = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr && build_path[0] != '\0') handle_ = dlopen(build_path, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) fail(std::string("cannot open it: ") + dlerror());
  }
  // Kept open for the life of the process, as a linked library would be.
  template <typename Function>
  void bind(Function& function, const char* name) {
    function = reinterpret_cast<Function>(dlsym(handle_, name));
    if (function == nullptr) fail(std::string("it has no ") + name);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw CudaError(std::string(soname_) + " (used by the GPU SVD steps): " + why, cudaErrorSharedObjectInitFailed);
  }
  const char* soname_;
  void* handle_ = nullptr;
};

const char* cusolver_status_name(cusolverStatus_t status) {
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
}  // namespace

// Each entry point bound by the name it is declared with, so its type and its symbol agree.
#define IMFLOW_BIND(library, member, function) (library).bind<decltype(&function)>(member, #function)

const CublasApi& cublas() {
  static const CublasApi api = [] {
    SharedLibrary library(IMFLOW_CUBLAS_SONAME, IMFLOW_CUBLAS_PATH);
    CublasApi a;
    IMFLOW_BIND(library, a.create, cublasCreate_v2);
    IMFLOW_BIND(library, a.destroy, cublasDestroy_v2);
    IMFLOW_BIND(library, a.set_stream, cublasSetStream_v2);
    IMFLOW_BIND(library, a.sgemm, cublasSgemm_v2);
    IMFLOW_BIND(library, a.sgemm_strided_batched, cublasSgemmStridedBatched);
    IMFLOW_BIND(library, a.sgeam, cublasSgeam);
    IMFLOW_BIND(library, a.status_name, cublasGetStatusName);
    IMFLOW_BIND(library, a.status_string, cublasGetStatusString);
    return a;
  }();
  return api;
}

const CusolverApi& cusolver() {
  static const CusolverApi api = [] {
    SharedLibrary library(IMFLOW_CUSOLVER_SONAME, IMFLOW_CUSOLVER_PATH);
    CusolverApi a;
    IMFLOW_BIND(library, a.create, cusolverDnCreate);
    IMFLOW_BIND(library, a.destroy, cusolverDnDestroy);
    IMFLOW_BIND(library, a.set_stream, cusolverDnSetStream);
    IMFLOW_BIND(library, a.create_gesvdj_info, cusolverDnCreateGesvdjInfo);
    IMFLOW_BIND(library, a.destroy_gesvdj_info, cusolverDnDestroyGesvdjInfo);
    IMFLOW_BIND(library, a.sgeqrf_buffer_size, cusolverDnSgeqrf_bufferSize);
    IMFLOW_BIND(library, a.sgeqrf, cusolverDnSgeqrf);
    IMFLOW_BIND(library, a.sorgqr_buffer_size, cusolverDnSorgqr_bufferSize);
    IMFLOW_BIND(library, a.sorgqr, cusolverDnSorgqr);
    IMFLOW_BIND(library, a.sgesvd_buffer_size, cusolverDnSgesvd_bufferSize);
    IMFLOW_BIND(library, a.sgesvd, cusolverDnSgesvd);
    IMFLOW_BIND(library, a.sgesvdj_buffer_size, cusolverDnSgesvdj_bufferSize);
    IMFLOW_BIND(library, a.sgesvdj, cusolverDnSgesvdj);
    IMFLOW_BIND(library, a.sgesvda_strided_batched_buffer_size, cusolverDnSgesvdaStridedBatched_bufferSize);
    IMFLOW_BIND(library, a.sgesvda_strided_batched, cusolverDnSgesvdaStridedBatched);
    return a;
  }();
  return api;
}

#undef IMFLOW_BIND

void open_linear_algebra() noexcept {
  try {
    cublas();
    cusolver();
  } catch (const CudaError&) {
  }
}

namespace detail {
void check_cublas(cublasStatus_t status, const char* statement, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const cudaError_t code = status == CUBLAS_STATUS_ALLOC_FAILED ? cudaErrorMemoryAllocation : cudaErrorUnknown;
  throw CudaError(where(file, line, statement) + cublas().status_name(status) + ": " + cublas().status_string(status),
                  code);
}

void check_cusolver(cusolverStatus_t status, const char* statement, const char* file, int line) {
  if (status == CUSOLVER_STATUS_SUCCESS) return;
  const cudaError_t code = status == CUSOLVER_STATUS_ALLOC_FAILED ? cudaErrorMemoryAllocation : cudaErrorUnknown;
  throw CudaError(where(file, line, statement) + cusolver_status_name(status) + " (" +
                      std::to_string(static_cast<int>(status)) + ")",
                  code);
}
}  // namespace detail

}  // namespace imflow::cuda
