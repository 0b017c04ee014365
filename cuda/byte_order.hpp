// The byte swap of float32 FITS words on the device: a whole image read in the file's big-endian
// order (ReadLimits::float32_swap_deferred) becomes host-order floats after its upload.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace imflow::cuda {

// Reverse the bytes of each of the n 4-byte words at `words` (device memory, 16-byte aligned as
// cudaMalloc's is), in place, on `stream`. Bit for bit the host's swap: NaN payloads, signed
// zeros and subnormals are kept. Never synchronizes.
void swap_float32_words(float* words, int64_t n, cudaStream_t stream);

}  // namespace imflow::cuda
