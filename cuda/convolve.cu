// Convolution: rank-1 kernels by one fused separable kernel (64x32 output tile + halo in shared
// memory, row pass then column pass); others by 32x32 tiles of the general 2-D kernel, or a direct
// global-memory kernel when a huge kernel does not fit in shared memory.
#include <cstring>
#include <stdexcept>
#include <vector>

#include "cuda/convolve.hpp"
#include "cuda/measured_image.hpp"
#include "cuda/sep_filter.hpp"
#include "cuda/device_common.cuh"

namespace imflow::cuda {
namespace {

constexpr int kTileX = 32;
constexpr int kTileY = 32;
constexpr int kBlockY = 8;
constexpr int kRowsPerThread = kTileY / kBlockY;

struct ConvArgs {
  const float* in;
  float* out;
  const float* weights;  // kw x kh, row-major, as given (not flipped)
  int64_t in_w, in_h, out_w, out_h;
  int kw, kh;
  int64_t off_x, off_y;  // output (x, y) is full-result (x + off_x, y + off_y)
};

__global__ void __launch_bounds__(kTileX * kBlockY) tiled_kernel(ConvArgs c) {
  extern __shared__ float shared[];
  const int tile_w = kTileX + c.kw - 1;
  const int tile_h = kTileY + c.kh - 1;
  float* tile = shared;
  float* flipped = shared + tile_w * tile_h;
  const int tid = threadIdx.y * kTileX + threadIdx.x;
  const int nthreads = kTileX * kBlockY;
  const int ksize = c.kw * c.kh;
  for (int k = tid; k < ksize; k += nthreads) flipped[k] = c.weights[ksize - 1 - k];

  const int64_t x0 = static_cast<int64_t>(blockIdx.x) * kTileX;
  const int64_t y0 = static_cast<int64_t>(blockIdx.y) * kTileY;
  const int64_t base_x = x0 + c.off_x - (c.kw - 1);
  const int64_t base_y = y0 + c.off_y - (c.kh - 1);
  for (int t = tid; t < tile_w * tile_h; t += nthreads) {
    const int ty = t / tile_w;
    const int tx = t - ty * tile_w;
    const int64_t gx = base_x + tx, gy = base_y + ty;
    tile[t] = (gx >= 0 && gx < c.in_w && gy >= 0 && gy < c.in_h) ? __ldg(c.in + gy * c.in_w + gx) : 0.0f;
  }
  __syncthreads();

  float acc[kRowsPerThread] = {};
  for (int j = 0; j < c.kh; ++j) {
    for (int i = 0; i < c.kw; ++i) {
      const float w = flipped[j * c.kw + i];
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r)
        acc[r] = fmaf(w, tile[(threadIdx.y + r * kBlockY + j) * tile_w + threadIdx.x + i], acc[r]);
    }
  }
  const int64_t x = x0 + threadIdx.x;
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    const int64_t y = y0 + threadIdx.y + r * kBlockY;
    if (x < c.out_w && y < c.out_h) c.out[y * c.out_w + x] = acc[r];
  }
}

// Separable: weights = [flipped row (kw) | flipped column (kh)]. Each block: load the zero-padded
// (64+kw-1) x (32+kh-1) input tile, convolve its rows into a (32+kh-1) x 64 tile, then each thread
// slides down its column for 8 consecutive outputs.
constexpr int kSepTileX = 64;
constexpr int kSepTileY = 32;
constexpr int kSepBlockY = 4;
constexpr int kSepRows = kSepTileY / kSepBlockY;

size_t separable_smem(int kw, int kh) {
  return (static_cast<size_t>(kSepTileX + kw - 1) * (kSepTileY + kh - 1) +
          static_cast<size_t>(kSepTileY + kh - 1) * kSepTileX + kw + kh) * sizeof(float);
}

// KW, KH: the kernel's size when known at compile time (fully unrolled loops), 0 for any size.
template <int KW, int KH>
__global__ void __launch_bounds__(kSepTileX * kSepBlockY) separable_kernel(ConvArgs c) {
  extern __shared__ float shared[];
  const int kw = KW ? KW : c.kw;
  const int kh = KH ? KH : c.kh;
  const int tile_w = kSepTileX + kw - 1;
  const int tile_h = kSepTileY + kh - 1;
  float* tile = shared;
  float* mid = tile + tile_w * tile_h;
  float* wrow = mid + tile_h * kSepTileX;
  float* wcol = wrow + kw;
  const int tid = threadIdx.y * kSepTileX + threadIdx.x;
  constexpr int nthreads = kSepTileX * kSepBlockY;
  for (int k = tid; k < kw + kh; k += nthreads) wrow[k] = c.weights[k];

  const int64_t x0 = static_cast<int64_t>(blockIdx.x) * kSepTileX;
  const int64_t y0 = static_cast<int64_t>(blockIdx.y) * kSepTileY;
  const int64_t base_x = x0 + c.off_x - (kw - 1);
  const int64_t base_y = y0 + c.off_y - (kh - 1);
  for (int ty = threadIdx.y; ty < tile_h; ty += kSepBlockY) {
    const int64_t gy = base_y + ty;
    const bool row_in = gy >= 0 && gy < c.in_h;
    const float* src = c.in + (row_in ? gy : 0) * c.in_w;
    for (int tx = threadIdx.x; tx < tile_w; tx += kSepTileX) {
      const int64_t gx = base_x + tx;
      tile[ty * tile_w + tx] = (row_in && gx >= 0 && gx < c.in_w) ? __ldg(src + gx) : 0.0f;
    }
  }
  __syncthreads();
  for (int ty = threadIdx.y; ty < tile_h; ty += kSepBlockY) {
    const float* src = tile + ty * tile_w + threadIdx.x;
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < kw; ++i) acc = fmaf(wrow[i], src[i], acc);
    mid[ty * kSepTileX + threadIdx.x] = acc;
  }
  __syncthreads();
  const int r0 = threadIdx.y * kSepRows;
  float acc[kSepRows] = {};
#pragma unroll
  for (int m = 0; m < kh + kSepRows - 1; ++m) {  // mid row r0 + m feeds outputs r with tap m - r
    const float v = mid[(r0 + m) * kSepTileX + threadIdx.x];
#pragma unroll
    for (int r = 0; r < kSepRows; ++r) {
      const int k = m - r;
      if (k >= 0 && k < kh) acc[r] = fmaf(wcol[k], v, acc[r]);
    }
  }
  const int64_t x = x0 + threadIdx.x;
  if (x >= c.out_w) return;
#pragma unroll
  for (int r = 0; r < kSepRows; ++r) {
    const int64_t y = y0 + r0 + r;
    if (y < c.out_h) c.out[y * c.out_w + x] = acc[r];
  }
}

__global__ void direct_kernel(ConvArgs c) {
  const int64_t x = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= c.out_w) return;
  for (int64_t y = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; y < c.out_h;
       y += static_cast<int64_t>(gridDim.y) * blockDim.y) {
    float acc = 0.0f;
    for (int j = 0; j < c.kh; ++j) {
      const int64_t sy = y + c.off_y - j;
      if (sy < 0 || sy >= c.in_h) continue;
      for (int i = 0; i < c.kw; ++i) {
        const int64_t sx = x + c.off_x - i;
        if (sx < 0 || sx >= c.in_w) continue;
        acc = fmaf(__ldg(c.weights + j * c.kw + i), __ldg(c.in + sy * c.in_w + sx), acc);
      }
    }
    c.out[y * c.out_w + x] = acc;
  }
}

// The device copy of a kernel, uploaded once per slot and content: [kernel | flipped row |
// flipped column], the factors only when the kernel is rank-1 (kernels::separable_factors).
const ConvolveWeights& cached_weights(GpuContext& gpu, const float* host_kernel, int kw, int kh) {
  const size_t count = static_cast<size_t>(kw) * static_cast<size_t>(kh);
  for (const auto& w : gpu.convolve_weights)
    if (w->kw == kw && w->kh == kh && std::memcmp(w->host.data(), host_kernel, count * sizeof(float)) == 0)
      return *w;
  auto w = std::make_unique<ConvolveWeights>();
  w->host.assign(host_kernel, host_kernel + count);
  w->kw = kw;
  w->kh = kh;
  std::vector<float> row, col;
  w->separable = count > 1 && kernels::separable_factors({host_kernel, kw, kh}, row, col);
  const size_t total = count + (w->separable ? static_cast<size_t>(kw + kh) : 0);
  w->staging.reserve(total);
  std::memcpy(w->staging.data(), host_kernel, count * sizeof(float));
  if (w->separable) {
    for (int i = 0; i < kw; ++i) w->staging.data()[count + i] = row[static_cast<size_t>(kw - 1 - i)];
    for (int j = 0; j < kh; ++j) w->staging.data()[count + kw + j] = col[static_cast<size_t>(kh - 1 - j)];
  }
  w->device.reserve(total);
  IMFLOW_CUDA_CHECK(
      cudaMemcpyAsync(w->device.data(), w->staging.data(), total * sizeof(float), cudaMemcpyHostToDevice, gpu.stream));
  gpu.convolve_weights.push_back(std::move(w));
  return *gpu.convolve_weights.back();
}

// Elementwise: out = in - (back ? back[i] : float(results->median)), the float32 pixel less its
// background as the CPU's convolve subtracts it before filtering.
__global__ void subtract_background_kernel(const float* __restrict__ in, const float* __restrict__ back,
                                           const DeviceResults* results, int64_t n, float* __restrict__ out) {
  const float level = back != nullptr ? 0.0f : static_cast<float>(results->median);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i] - (back != nullptr ? back[i] : level);
  }
}

// The filter's source (`source`), or with `subtract` a copy of it less the detection image's
// background (the mesh map, or the global median) in gpu.filter_input.
const float* filter_source(GpuContext& gpu, const float* source, bool subtract) {
  if (!subtract) return source;
  if (!gpu.has_background) throw std::logic_error("cuda::convolve: no background to subtract before filtering");
  gpu.filtered_shapes = true;  // measure takes the positions and shapes from the filtered image
  const int64_t n = gpu.size();
  gpu.filter_input.reserve(static_cast<size_t>(n) + 4);
  const float* back = gpu.has_background_maps ? gpu.mesh_background->back_map.data() : nullptr;
  subtract_background_kernel<<<detail::blocks_for(n, 256, 8192), 256, 0, gpu.stream>>>(source, back, gpu.results.data(), n,
                                                                                      gpu.filter_input.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  return gpu.filter_input.data();
}

}  // namespace

void convolve(GpuContext& gpu, const float* host_kernel, int kw, int kh, kernels::ConvolveMode mode,
              bool to_detection, bool allow_separable, bool subtract_background) {
  if (kw < 1 || kh < 1 || host_kernel == nullptr) throw std::invalid_argument("cuda::convolve: empty kernel");
  if (to_detection && mode != kernels::ConvolveMode::same)
    throw std::invalid_argument("cuda::convolve: a detection image needs mode 'same'");
  DeviceGuard guard(gpu.device);
  const bool full = mode == kernels::ConvolveMode::full;
  ConvArgs c{};
  // The CPU's source (item.detection_image()): a detection image made or uploaded before, else the image.
  const bool from_detection = gpu.has_detection;
  c.in = filter_source(gpu, from_detection ? gpu.detection.data() : gpu.image.data(), subtract_background);
  c.in_w = gpu.width;
  c.in_h = gpu.height;
  c.out_w = kernels::convolved_width(gpu.width, kw, mode);
  c.out_h = kernels::convolved_height(gpu.height, kh, mode);
  c.kw = kw;
  c.kh = kh;
  c.off_x = full ? 0 : (kw - 1) / 2;
  c.off_y = full ? 0 : (kh - 1) / 2;
  if (!to_detection && gpu.has_detection && (c.out_w != gpu.width || c.out_h != gpu.height))
    throw std::logic_error("cuda::convolve: cannot resize the image after a detection image was made");
  const ConvolveWeights& weights = cached_weights(gpu, host_kernel, kw, kh);
  c.weights = weights.device.data();
  const int64_t out_n = c.out_w * c.out_h;
  if (to_detection && !from_detection) {
    gpu.detection.reserve(static_cast<size_t>(out_n));
    c.out = gpu.detection.data();
  } else {
    gpu.image_spare.reserve(static_cast<size_t>(out_n) + 4);
    c.out = gpu.image_spare.data();
  }

  if (out_n > 0 && c.in_w > 0 && c.in_h > 0) {
    const size_t smem = (static_cast<size_t>(kTileX + kw - 1) * (kTileY + kh - 1) + static_cast<size_t>(kw) * kh) *
                        sizeof(float);
    const int64_t rows = (c.out_h + kTileY - 1) / kTileY;
    const size_t sep_smem = separable_smem(kw, kh);
    const int64_t sep_rows = (c.out_h + kSepTileY - 1) / kSepTileY;
    if (allow_separable && weights.separable && sep_smem <= gpu.max_shared_optin && sep_rows <= 65535) {
      void (*kernel)(ConvArgs) = kw == 15 && kh == 15 ? separable_kernel<15, 15>
                                 : kw == 5 && kh == 5 ? separable_kernel<5, 5>
                                                      : separable_kernel<0, 0>;
      if (sep_smem > 48 * 1024)
        IMFLOW_CUDA_CHECK(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(sep_smem)));
      c.weights += static_cast<size_t>(kw) * kh;
      const dim3 grid(static_cast<unsigned>((c.out_w + kSepTileX - 1) / kSepTileX), static_cast<unsigned>(sep_rows));
      kernel<<<grid, dim3(kSepTileX, kSepBlockY), sep_smem, gpu.stream>>>(c);
    } else if (smem <= gpu.max_shared_optin && rows <= 65535) {
      if (smem > 48 * 1024)
        IMFLOW_CUDA_CHECK(
            cudaFuncSetAttribute(tiled_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
      const dim3 grid(static_cast<unsigned>((c.out_w + kTileX - 1) / kTileX), static_cast<unsigned>(rows));
      tiled_kernel<<<grid, dim3(kTileX, kBlockY), smem, gpu.stream>>>(c);
    } else {
      const int64_t brows = (c.out_h + 7) / 8;
      const dim3 grid(static_cast<unsigned>((c.out_w + 31) / 32), static_cast<unsigned>(brows < 65535 ? brows : 65535));
      direct_kernel<<<grid, dim3(32, 8), 0, gpu.stream>>>(c);
    }
    IMFLOW_CUDA_CHECK_LAUNCH();
  } else if (out_n > 0) {  // empty input, full mode: all zeros
    IMFLOW_CUDA_CHECK(cudaMemsetAsync(c.out, 0, static_cast<size_t>(out_n) * sizeof(float), gpu.stream));
  }

  if (to_detection) {
    if (from_detection) {
      keep_detection_as_read(gpu);
      swap(gpu.detection, gpu.image_spare);
    }
    gpu.has_detection = true;
  } else {
    swap(gpu.image, gpu.image_spare);
    gpu.width = c.out_w;
    gpu.height = c.out_h;
    gpu.image_modified = true;
    gpu.has_detection = false;  // the filtered image is the image now, as on the CPU
  }
}

void convolve_sep(GpuContext& gpu, const kernels::SepFilterKernel& kernel, bool to_detection, bool subtract_background) {
  DeviceGuard guard(gpu.device);
  const int kw = static_cast<int>(kernel.width), kh = static_cast<int>(kernel.height);
  const ConvolveWeights& weights = cached_weights(gpu, kernel.values.data(), kw, kh);
  const size_t n = static_cast<size_t>(gpu.size());
  gpu.image_spare.reserve(n + 4);
  const float* source = filter_source(gpu, gpu.has_detection ? gpu.detection.data() : gpu.image.data(), subtract_background);
  sep_convolve(source, gpu.width, gpu.height, {weights.device.data(), kernel.width, kernel.height},
               gpu.image_spare.data(), gpu.stream);
  if (to_detection) {
    keep_detection_as_read(gpu);
    swap(gpu.detection, gpu.image_spare);
    gpu.has_detection = true;
  } else {
    swap(gpu.image, gpu.image_spare);
    gpu.has_detection = false;
    gpu.image_modified = true;
  }
}

}  // namespace imflow::cuda
