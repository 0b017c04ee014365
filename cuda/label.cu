// Union-find CCL (Playne & Hawick / Allegretti "BUF" style). Invariant kept by every phase:
// labels[x] <= x and labels[x] lies in x's component, so each tree's root is its smallest index,
// i.e. the component's first pixel in raster order; numbering the roots in raster order (a bit
// per pixel, a count per warp word, an inclusive scan of the counts) then numbers the components
// exactly as scipy.ndimage.label does.
//   init:     each pixel points at the start of its horizontal run within its warp (a warp is 32
//             pixels of one row), or at its left neighbour when the run enters from the previous
//             warp; only its own entry is written, computed from the mask alone.
//   merge:    one union per vertical adjacency that the row runs do not already imply; find uses
//             path halving (stores an ancestor only) and the link is an atomicMin on a root.
//   compress: the run start of each warp run finds its root read-only and shares it by shuffle;
//             every pixel writes only its own entry, with its final root.
#include <cub/device/device_scan.cuh>
#include <limits>
#include <stdexcept>

#include "cuda/device_common.cuh"
#include "cuda/label.hpp"

namespace imflow::cuda {
namespace {

constexpr int kBlockX = 32;  // one warp = 32 consecutive pixels of one row (the warp scans rely on it)
constexpr int kBlockY = 8;
static_assert(kBlockX == 32, "the run-start ballots assume a warp spans exactly one block row");

struct Grid2D {
  const uint8_t* mask;
  int32_t* labels;
  int width;
  int height;
};

// Read-only find, for the compress phase: there, a store into another pixel's entry could race
// with that pixel's own final `labels[k] = root` and leave a non-root for relabel_kernel.
__device__ __forceinline__ int32_t find_root(const int32_t* labels, int32_t i) {
  int32_t parent = __ldcg(labels + i);
  while (parent != i) {
    i = parent;
    parent = __ldcg(labels + i);
  }
  return i;
}

// Find with path halving, for the merge phase only. It stores into labels[i] only after seeing
// i is not a root (a non-root never becomes a root again), and what it stores is the parent of
// i's earlier parent: a smaller index of the same component that was an ancestor of i. Replacing
// the edge i->p by i->grand(p) keeps the forest's connectivity, even when it overwrites a
// concurrent atomicMin on the non-root i (that thread then unites i's old parent itself, see
// unite), so the halving can never split a component or link two different ones.
__device__ __forceinline__ int32_t find_halving(int32_t* labels, int32_t i) {
  while (true) {
    const int32_t parent = __ldcg(labels + i);
    if (parent == i) return i;
    const int32_t grand = __ldcg(labels + parent);
    if (grand == parent) return parent;
    __stcg(labels + i, grand);
    i = grand;
  }
}

// Join the trees of a and b: the larger root is re-pointed to the smaller one with atomicMin, so
// entries only ever point to smaller indices. If the "root" was re-linked meanwhile (old != root),
// the atomicMin may have replaced its edge to old by an edge to the other root; the loop then
// unites old with that root, which restores the connectivity before the union returns.
__device__ void unite(int32_t* labels, int32_t a, int32_t b) {
  bool done = false;
  while (!done) {
    a = find_halving(labels, a);
    b = find_halving(labels, b);
    if (a < b) {
      const int32_t old = atomicMin(labels + b, a);
      done = old == b;
      b = old;
    } else if (b < a) {
      const int32_t old = atomicMin(labels + a, b);
      done = old == a;
      a = old;
    } else {
      done = true;
    }
  }
}

// Loops over the pixels of the image with 2-D blocks (grid-stride in y for tall images). Every
// lane of a warp has the same y, hence the same trip count, so warp intrinsics in the body are
// reached by all lanes that did not return (the lanes past the image width, always the top ones).
#define IMFLOW_FOR_EACH_PIXEL(g)                                                  \
  const int x = blockIdx.x * kBlockX + threadIdx.x;                               \
  if (x >= (g).width) return;                                                     \
  for (int y = blockIdx.y * kBlockY + threadIdx.y; y < (g).height; y += gridDim.y * kBlockY)

// Lanes of this warp inside the image: lanes 0 .. width - (x - lane) - 1.
__device__ __forceinline__ unsigned active_lanes(int width, int x) {
  const int lanes_in = width - (x - static_cast<int>(threadIdx.x));
  return lanes_in >= 32 ? 0xffffffffu : (1u << lanes_in) - 1u;
}

// Lane where the caller's horizontal run of set pixels starts within the warp (0 when the run
// reaches lane 0; meaningful for set pixels only). All lanes in `active` must call it.
__device__ __forceinline__ int run_start_lane(bool set, unsigned active) {
  const unsigned bits = __ballot_sync(active, set);
  const unsigned gaps = ~bits & ((1u << threadIdx.x) - 1u);  // clear lanes left of this one
  return gaps ? 32 - __clz(gaps) : 0;
}

// Writes only labels[i] of its own pixel, from the mask alone: no race. Every set pixel is left
// joined to its left neighbour (same run start, or the neighbour itself at lane 0).
__global__ void init_kernel(Grid2D g) {
  IMFLOW_FOR_EACH_PIXEL(g) {
    const int32_t i = y * g.width + x;
    const int lane = threadIdx.x;
    const bool set = g.mask[i] != 0;
    const int start = run_start_lane(set, active_lanes(g.width, x));
    int32_t parent = -1;
    if (set) {
      if (start < lane) {
        parent = i - (lane - start);
      } else if (x > 0 && g.mask[i - 1]) {  // start == lane: only lane 0 can have a set left
        parent = i - 1;
      } else {
        parent = i;
      }
    }
    g.labels[i] = parent;
  }
}

// Unites each set pixel with its set upper neighbours, skipping the pairs already implied by
// horizontal adjacency (init joined every pixel to its left neighbour, and the row above is
// joined the same way), by induction on x:
//   4-conn: i ~ up follows from i ~ left ~ up-left ~ up when left and up-left are set.
//   8-conn: up is implied when left is set (left's up-right); up-left when up is set (same run
//           above) or left is set (left's up); up-right when up is set (same run above).
template <int Connectivity>
__global__ void merge_kernel(Grid2D g) {
  IMFLOW_FOR_EACH_PIXEL(g) {
    if (y == 0) continue;
    const int32_t i = y * g.width + x;
    if (!g.mask[i]) continue;
    const int32_t above = i - g.width;
    const bool left = x > 0 && g.mask[i - 1];
    const bool up = g.mask[above] != 0;
    if (Connectivity == 4) {
      if (up && !(left && g.mask[above - 1])) unite(g.labels, i, above);
    } else if (up) {
      if (!left) unite(g.labels, i, above);
    } else {
      if (!left && x > 0 && g.mask[above - 1]) unite(g.labels, i, above - 1);
      if (x + 1 < g.width && g.mask[above + 1]) unite(g.labels, i, above + 1);
    }
  }
}

// The roots, a bit per pixel: word w = y * words_per_row + x / 32 holds the roots among its
// row's pixels 32w .. 32w + 31 (bit = lane), and counts[w] their number (the scan's input).
struct RootBits {
  uint32_t* words;
  int32_t* counts;  // then their inclusive scan
  int words_per_row;
};

__device__ __forceinline__ void store_roots(const RootBits& r, int x, int y, bool is_root, unsigned active) {
  const unsigned bits = __ballot_sync(active, is_root);
  if (threadIdx.x == 0) {
    const int64_t w = static_cast<int64_t>(y) * r.words_per_row + x / kBlockX;
    r.words[w] = bits;
    r.counts[w] = __popc(bits);
  }
}

// labels[i] = root, and the root bits. The forest is final (merge is done), so every entry
// another thread may read here is i's old parent or i's root, both ancestors: the read-only finds
// are exact, and each thread writes only its own entry, with its final root.
__global__ void compress_kernel(Grid2D g, RootBits roots) {
  IMFLOW_FOR_EACH_PIXEL(g) {
    const int32_t i = y * g.width + x;
    const bool set = g.mask[i] != 0;
    const unsigned active = active_lanes(g.width, x);
    const int start = run_start_lane(set, active);
    // One find per warp run: its pixels share the start's root.
    int32_t root = set && start == static_cast<int>(threadIdx.x) ? find_root(g.labels, i) : -1;
    root = __shfl_sync(active, root, start);
    if (set) {
      g.labels[i] = root;
    } else {
      root = -1;
    }
    store_roots(roots, x, y, root == i, active);
  }
}

// With minarea: each root's pixel count, then the root bits keep only roots of minarea pixels.
__global__ void count_kernel(Grid2D g, int32_t* npix) {
  IMFLOW_FOR_EACH_PIXEL(g) {
    const int32_t root = g.labels[y * g.width + x];
    if (root >= 0) atomicAdd(&npix[root], 1);
  }
}

__global__ void keep_kernel(Grid2D g, const int32_t* npix, int64_t minarea, RootBits roots) {
  IMFLOW_FOR_EACH_PIXEL(g) {
    const int32_t i = y * g.width + x;
    store_roots(roots, x, y, g.labels[i] == i && npix[i] >= minarea, active_lanes(g.width, x));
  }
}

// A kept root's number: the roots before its word (the scan), then those before it in its word.
__device__ __forceinline__ int32_t root_number(const RootBits& r, int width, int32_t root) {
  const int32_t ry = root / width, rx = root - ry * width;
  const int64_t w = static_cast<int64_t>(ry) * r.words_per_row + rx / kBlockX;
  return r.counts[w] - __popc(r.words[w] >> (rx % kBlockX)) + 1;
}

// npix: null (every root kept), or the roots' pixel counts (roots below minarea become 0).
__global__ void relabel_kernel(Grid2D g, RootBits roots, const int32_t* npix, int64_t minarea,
                               DeviceResults* results) {
  IMFLOW_FOR_EACH_PIXEL(g) {
    const int32_t i = y * g.width + x;
    const int32_t root = g.labels[i];
    g.labels[i] = root >= 0 && (npix == nullptr || npix[root] >= minarea) ? root_number(roots, g.width, root) : 0;
    if (x == g.width - 1 && y == g.height - 1) {
      results->nlabels = roots.counts[static_cast<int64_t>(y) * roots.words_per_row + x / kBlockX];
    }
  }
}

}  // namespace

void label(GpuContext& gpu, int connectivity, int64_t minarea) {
  if (connectivity != 4 && connectivity != 8)
    throw std::invalid_argument("cuda::label: connectivity must be 4 or 8");
  if (!gpu.has_mask) throw std::logic_error("cuda::label: the segment step has not run on the GPU");
  const int64_t n = gpu.size();
  if (n >= std::numeric_limits<int32_t>::max())
    throw std::length_error("cuda::label: images of 2^31 pixels or more are not supported on the GPU");
  DeviceGuard guard(gpu.device);
  gpu.has_labels = true;
  gpu.labels.reserve(static_cast<size_t>(n) + 1);
  const int words_per_row = static_cast<int>((gpu.width + kBlockX - 1) / kBlockX);
  const int64_t words = gpu.height * words_per_row;
  gpu.label_roots.reserve(static_cast<size_t>(2 * words + 1));  // the root bits' words, then their counts
  if (n == 0) return;  // nlabels stays 0 (results were reset at upload)

  const Grid2D g{gpu.mask.data(), gpu.labels.data(), static_cast<int>(gpu.width), static_cast<int>(gpu.height)};
  const dim3 block(kBlockX, kBlockY);
  const int64_t rows = (gpu.height + kBlockY - 1) / kBlockY;
  const dim3 grid(static_cast<unsigned>((gpu.width + kBlockX - 1) / kBlockX),
                  static_cast<unsigned>(rows < 65535 ? rows : 65535));
  init_kernel<<<grid, block, 0, gpu.stream>>>(g);
  IMFLOW_CUDA_CHECK_LAUNCH();
  if (connectivity == 4) {
    merge_kernel<4><<<grid, block, 0, gpu.stream>>>(g);
  } else {
    merge_kernel<8><<<grid, block, 0, gpu.stream>>>(g);
  }
  IMFLOW_CUDA_CHECK_LAUNCH();
  const RootBits roots{reinterpret_cast<uint32_t*>(gpu.label_roots.data()), gpu.label_roots.data() + words,
                       words_per_row};
  compress_kernel<<<grid, block, 0, gpu.stream>>>(g, roots);
  IMFLOW_CUDA_CHECK_LAUNCH();
  int32_t* npix = nullptr;
  if (minarea > 1) {
    gpu.label_npix.reserve(static_cast<size_t>(n));
    npix = gpu.label_npix.data();
    IMFLOW_CUDA_CHECK(cudaMemsetAsync(npix, 0, static_cast<size_t>(n) * sizeof(int32_t), gpu.stream));
    count_kernel<<<grid, block, 0, gpu.stream>>>(g, npix);
    IMFLOW_CUDA_CHECK_LAUNCH();
    keep_kernel<<<grid, block, 0, gpu.stream>>>(g, npix, minarea, roots);
    IMFLOW_CUDA_CHECK_LAUNCH();
  }

  size_t temp_bytes = 0;
  const auto count = static_cast<int>(words);
  IMFLOW_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, roots.counts, roots.counts, count, gpu.stream));
  gpu.scratch.reserve(temp_bytes);
  IMFLOW_CUDA_CHECK(cub::DeviceScan::InclusiveSum(gpu.scratch.data(), temp_bytes, roots.counts, roots.counts, count,
                                                  gpu.stream));
  relabel_kernel<<<grid, block, 0, gpu.stream>>>(g, roots, npix, minarea, gpu.results.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
}

}  // namespace imflow::cuda
