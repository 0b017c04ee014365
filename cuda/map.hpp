// GPU `map`: every pixel replaced by a compiled expression (include/imflow/kernels/map.hpp), with
// exactly the CPU kernel's operations; each thread interprets the program for four pixels.
#pragma once
#include <cuda_runtime_api.h>

#include "cuda/gpu_context.hpp"
#include "imflow/kernels/map.hpp"

namespace imflow::cuda {

// Enqueue on gpu.stream over gpu.image; sets gpu.image_modified. Never synchronizes. Throws
// std::invalid_argument for a program compile_map_expression did not make.
void map(GpuContext& gpu, const kernels::MapProgram& program);

// The same over `count` contiguous device floats on `stream` (a batch's images, GpuBatch::images).
void map_values(float* values, long long count, const kernels::MapProgram& program, cudaStream_t stream);

}  // namespace imflow::cuda
