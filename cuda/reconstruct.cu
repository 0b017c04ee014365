// The reconstruction kernels (cuda/reconstruct.hpp).
#include <stdexcept>

#include "cuda/cuda_check.hpp"
#include "cuda/linear_algebra.hpp"
#include "cuda/reconstruct.hpp"

namespace imflow::cuda {

namespace {

// Problem blockIdx.z of a batch: the pointers moved to its factors and output.
__device__ __forceinline__ void select_problem(ReconstructArgs& a) {
  const long long b = blockIdx.z;
  a.u += b * a.stride_u;
  a.s += b * a.stride_s;
  a.v += b * a.stride_v;
  a.out += b * a.stride_out;
  a.k_device += b * a.stride_k;
}

__global__ void naive_kernel(ReconstructArgs a) {
  select_problem(a);
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= a.m || j >= a.n) return;
  const int k = *a.k_device;
  float acc = 0.0f;
  for (int l = 0; l < k; ++l) acc += a.u[i + (size_t)l * a.ldu] * a.s[l] * a.v[j + (size_t)l * a.ldv];
  a.out[(size_t)i * a.ldo + j] = acc;
}

// T x T threads, one output each; tiles of T components of U (scaled by s) and V in shared memory.
template <int T>
__global__ void tiled_kernel(ReconstructArgs a) {
  select_problem(a);
  __shared__ float us[T][T + 1];  // [row][component]
  __shared__ float vs[T][T + 1];  // [component][column]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i0 = blockIdx.y * T, j0 = blockIdx.x * T;
  const int i = i0 + ty, j = j0 + tx;
  const int k = *a.k_device;
  float acc = 0.0f;
  for (int l0 = 0; l0 < k; l0 += T) {
    // U tile: thread (tx, ty) loads row i0 + tx, component l0 + ty (coalesced along rows of U).
    {
      const int row = i0 + tx, l = l0 + ty;
      us[tx][ty] = (row < a.m && l < k) ? a.u[row + (size_t)l * a.ldu] * a.s[l] : 0.0f;
      const int col = j0 + tx;
      vs[ty][tx] = (col < a.n && l < k) ? a.v[col + (size_t)l * a.ldv] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int l = 0; l < T; ++l) acc += us[ty][l] * vs[l][tx];
    __syncthreads();
  }
  if (i < a.m && j < a.n) a.out[(size_t)i * a.ldo + j] = acc;
}

// Register blocking: block TX x TY threads computes a (TY*TM) x (TX*TN) tile of the output;
// thread (tx, ty) holds rows ty + r*TY and columns tx + c*TX (coalesced stores). Components go
// by in chunks of TK through shared memory.
template <int TX, int TY, int TM, int TN, int TK>
__global__ void __launch_bounds__(TX* TY) register_kernel(ReconstructArgs a) {
  select_problem(a);
  constexpr int BM = TY * TM, BN = TX * TN, NT = TX * TY;
  __shared__ float us[TK][BM];
  __shared__ float vs[TK][BN];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TX + tx;
  const int i0 = blockIdx.y * BM, j0 = blockIdx.x * BN;
  const int k = *a.k_device;
  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int c = 0; c < TN; ++c) acc[r][c] = 0.0f;
  for (int l0 = 0; l0 < k; l0 += TK) {
#pragma unroll
    for (int idx = tid; idx < TK * BM; idx += NT) {
      const int l = idx / BM, row = idx % BM;
      us[l][row] = (i0 + row < a.m && l0 + l < k) ? a.u[i0 + row + (size_t)(l0 + l) * a.ldu] * a.s[l0 + l] : 0.0f;
    }
#pragma unroll
    for (int idx = tid; idx < TK * BN; idx += NT) {
      const int l = idx / BN, col = idx % BN;
      vs[l][col] = (j0 + col < a.n && l0 + l < k) ? a.v[j0 + col + (size_t)(l0 + l) * a.ldv] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int l = 0; l < TK; ++l) {
      float ur[TM], vr[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) ur[r] = us[l][ty + r * TY];
#pragma unroll
      for (int c = 0; c < TN; ++c) vr[c] = vs[l][tx + c * TX];
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int c = 0; c < TN; ++c) acc[r][c] += ur[r] * vr[c];
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int i = i0 + ty + r * TY;
    if (i >= a.m) continue;
#pragma unroll
    for (int c = 0; c < TN; ++c) {
      const int j = j0 + tx + c * TX;
      if (j < a.n) a.out[(size_t)i * a.ldo + j] = acc[r][c];
    }
  }
}

// scratch (m x k_max, column-major, per problem) = U diag(s), zero for components >= k.
__global__ void prescale_kernel(ReconstructArgs a, float* __restrict__ us) {
  select_problem(a);
  us += (long long)blockIdx.z * a.m * a.k_max;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int l = blockIdx.y;
  if (i >= a.m) return;
  const int k = *a.k_device;
  us[i + (size_t)l * a.m] = l < k ? a.u[i + (size_t)l * a.ldu] * a.s[l] : 0.0f;
}

template <int TX, int TY, int TM, int TN, int TK>
void launch_register(const ReconstructArgs& a, cudaStream_t stream) {
  constexpr int BM = TY * TM, BN = TX * TN;
  const dim3 block(TX, TY), grid((a.n + BN - 1) / BN, (a.m + BM - 1) / BM, a.count);
  register_kernel<TX, TY, TM, TN, TK><<<grid, block, 0, stream>>>(a);
}

struct RegisterVariant {
  const char* name;
  void (*launch)(const ReconstructArgs&, cudaStream_t);
};
// name: threads TXxTY, outputs per thread TMxTN, TK components per shared tile.
const RegisterVariant kRegisterVariants[] = {
    {"16x16t_2x2o_k16", launch_register<16, 16, 2, 2, 16>},
    {"16x16t_4x4o_k16", launch_register<16, 16, 4, 4, 16>},
    {"32x8t_2x4o_k16", launch_register<32, 8, 4, 2, 16>},
    {"32x8t_4x4o_k8", launch_register<32, 8, 4, 4, 8>},
    {"16x8t_4x4o_k16", launch_register<16, 8, 4, 4, 16>},
    {"32x4t_4x2o_k16", launch_register<32, 4, 4, 2, 16>},
};
constexpr int kDefaultRegisterVariant = 0;

}  // namespace

int register_variants() { return static_cast<int>(sizeof(kRegisterVariants) / sizeof(kRegisterVariants[0])); }
std::string register_variant_name(int variant) { return kRegisterVariants[variant].name; }

ReconstructKernel parse_reconstruct_kernel(const std::string& name) {
  if (name == "naive") return ReconstructKernel::naive;
  if (name == "tiled") return ReconstructKernel::tiled;
  if (name == "register") return ReconstructKernel::register_blocked;
  if (name == "cublas") return ReconstructKernel::cublas;
  throw std::invalid_argument("unknown reconstruction kernel '" + name + "' (naive, tiled, register, cublas)");
}

const char* reconstruct_kernel_name(ReconstructKernel kernel) {
  switch (kernel) {
    case ReconstructKernel::naive: return "naive";
    case ReconstructKernel::tiled: return "tiled";
    case ReconstructKernel::register_blocked: return "register";
    case ReconstructKernel::cublas: return "cublas";
  }
  return "?";
}

void reconstruct(ReconstructKernel kernel, const ReconstructArgs& a, cudaStream_t stream, cublasHandle_t blas,
                 float* scratch, const ReconstructConfig& config) {
  if (a.m <= 0 || a.n <= 0 || a.count <= 0) return;
  if (a.count > 65535) throw std::invalid_argument("reconstruct: at most 65535 problems per launch");
  switch (kernel) {
    case ReconstructKernel::naive: {
      const int bx = config.bx > 0 ? config.bx : 32, by = config.by > 0 ? config.by : 8;
      const dim3 block(bx, by), grid((a.n + bx - 1) / bx, (a.m + by - 1) / by, a.count);
      naive_kernel<<<grid, block, 0, stream>>>(a);
      break;
    }
    case ReconstructKernel::tiled: {
      const int t = config.tile > 0 ? config.tile : 16;
      if (t == 8) {
        tiled_kernel<8><<<dim3((a.n + 7) / 8, (a.m + 7) / 8, a.count), dim3(8, 8), 0, stream>>>(a);
      } else if (t == 16) {
        tiled_kernel<16><<<dim3((a.n + 15) / 16, (a.m + 15) / 16, a.count), dim3(16, 16), 0, stream>>>(a);
      } else if (t == 32) {
        tiled_kernel<32><<<dim3((a.n + 31) / 32, (a.m + 31) / 32, a.count), dim3(32, 32), 0, stream>>>(a);
      } else {
        throw std::invalid_argument("tiled reconstruction: tile must be 8, 16 or 32");
      }
      break;
    }
    case ReconstructKernel::register_blocked: {
      const int v = config.variant >= 0 ? config.variant : kDefaultRegisterVariant;
      if (v >= register_variants()) throw std::invalid_argument("register reconstruction: no such variant");
      kRegisterVariants[v].launch(a, stream);
      break;
    }
    case ReconstructKernel::cublas: {
      if (blas == nullptr || scratch == nullptr) throw std::invalid_argument("cublas reconstruction needs a handle and scratch");
      if (a.k_max <= 0) {
        for (int b = 0; b < a.count; ++b) {
          IMFLOW_CUDA_CHECK(cudaMemset2DAsync(a.out + b * a.stride_out, sizeof(float) * a.ldo, 0, sizeof(float) * a.n,
                                              a.m, stream));
        }
        return;
      }
      prescale_kernel<<<dim3((a.m + 127) / 128, a.k_max, a.count), 128, 0, stream>>>(a, scratch);
      IMFLOW_CUDA_CHECK_LAUNCH();
      // Row-major out (m x n) is column-major out^T (n x m) = V (n x K) * (U diag s)^T (K x m).
      const float one = 1.0f, zero = 0.0f;
      if (a.count == 1) {
        IMFLOW_CUBLAS_CHECK(cublas().sgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, a.n, a.m, a.k_max, &one, a.v, a.ldv, scratch,
                                        a.m, &zero, a.out, a.ldo));
      } else {
        IMFLOW_CUBLAS_CHECK(cublas().sgemm_strided_batched(blas, CUBLAS_OP_N, CUBLAS_OP_T, a.n, a.m, a.k_max, &one, a.v,
                                                      a.ldv, a.stride_v, scratch, a.m,
                                                      static_cast<long long>(a.m) * a.k_max, &zero, a.out, a.ldo,
                                                      a.stride_out, a.count));
      }
      return;
    }
  }
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
