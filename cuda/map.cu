// GPU `map` (cuda/map.hpp): a grid-stride kernel in which each thread loads four pixels (one
// float4), runs the program on them (an interpreter over the instructions, the program passed by
// value in kernel-argument memory: no global state, so streams with different programs never
// race), and stores them; a tail of fewer than four pixels is done one at a time.
#include <cstdint>
#include <stdexcept>

#include "cuda/cuda_check.hpp"
#include "cuda/device_common.cuh"
#include "cuda/map.hpp"

namespace imflow::cuda {

namespace {

using kernels::MapOp;
using kernels::MapOperand;
using kernels::MapProgram;

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 8192;

// Run the program on L pixel values, in place. The top of the stack stays in registers; the
// values below it in a small per-thread array.
template <int L>
__device__ __forceinline__ void evaluate(const MapProgram& program, float (&v)[L]) {
  float below[kernels::kMapMaxStack][L];
  float top[L];
#pragma unroll
  for (int l = 0; l < L; ++l) top[l] = 0.0f;
  int size = 0;  // values on the stack, the top included
  for (int pc = 0; pc < program.length; ++pc) {
    const MapOp op = program.op[pc];
    const float value = program.value[pc];
    if (op == MapOp::push_x || op == MapOp::push_const) {
      if (size > 0) {
#pragma unroll
        for (int l = 0; l < L; ++l) below[size - 1][l] = top[l];
      }
      ++size;
#pragma unroll
      for (int l = 0; l < L; ++l) top[l] = op == MapOp::push_x ? v[l] : value;
      continue;
    }
    float lhs[L], rhs[L];
    const MapOperand operand = kernels::map_is_binary(op) ? program.operand[pc] : MapOperand::right_value;
#pragma unroll
    for (int l = 0; l < L; ++l) {
      if (operand == MapOperand::stack) lhs[l] = below[size - 2][l], rhs[l] = top[l];
      else if (operand == MapOperand::right_value) lhs[l] = top[l], rhs[l] = value;
      else lhs[l] = value, rhs[l] = top[l];
    }
    if (operand == MapOperand::stack) --size;
    switch (op) {
#define IMFLOW_MAP_DEVICE_CASE(name)                                                   \
  case MapOp::name:                                                                    \
    for (int l = 0; l < L; ++l) top[l] = kernels::map_apply<MapOp::name>(lhs[l], rhs[l]); \
    break;
      IMFLOW_MAP_UNARY_OPS(IMFLOW_MAP_DEVICE_CASE)
      IMFLOW_MAP_BINARY_OPS(IMFLOW_MAP_DEVICE_CASE)
#undef IMFLOW_MAP_DEVICE_CASE
      default:
        break;
    }
  }
#pragma unroll
  for (int l = 0; l < L; ++l) v[l] = top[l];
}

// values[0, 4 * quads) as float4 (16-byte aligned), then values[4 * quads, n) one by one.
__global__ void map_kernel(float* __restrict__ values, long long quads, long long n,
                           const __grid_constant__ MapProgram program) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long start = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  float4* __restrict__ values4 = reinterpret_cast<float4*>(values);
  for (long long i = start; i < quads; i += stride) {
    const float4 q = values4[i];
    float v[4] = {q.x, q.y, q.z, q.w};
    evaluate<4>(program, v);
    values4[i] = make_float4(v[0], v[1], v[2], v[3]);
  }
  for (long long i = quads * 4 + start; i < n; i += stride) {
    float v[1] = {values[i]};
    evaluate<1>(program, v);
    values[i] = v[0];
  }
}

}  // namespace

void map_values(float* values, long long count, const MapProgram& program, cudaStream_t stream) {
  if (program.length <= 0 || program.length > kernels::kMapMaxOps || program.max_stack > kernels::kMapMaxStack) {
    throw std::invalid_argument("cuda::map: not a compiled map program");
  }
  if (count <= 0) return;
  const bool aligned = reinterpret_cast<uintptr_t>(values) % alignof(float4) == 0;
  const long long quads = aligned ? count / 4 : 0;
  const long long threads = quads > 0 ? quads : count;  // the tail (< 4 values) rides on the first threads
  map_kernel<<<detail::blocks_for(threads, kThreads, kMaxBlocks), kThreads, 0, stream>>>(values, quads, count, program);
  IMFLOW_CUDA_CHECK_LAUNCH();
}

void map(GpuContext& gpu, const MapProgram& program) {
  DeviceGuard guard(gpu.device);
  map_values(gpu.image.data(), gpu.size(), program, gpu.stream);
  gpu.image_modified = true;
}

}  // namespace imflow::cuda
