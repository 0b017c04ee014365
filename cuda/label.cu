// Union-find CCL (Playne & Hawick / Allegretti "BUF" style). Invariant kept by every phase:
// labels[x] <= x and labels[x] lies in x's component, so each tree's root is its smallest index,
// i.e. the component's first pixel in raster order; numbering the roots in raster order (a bit
// per pixel, a count per warp word, an inclusive scan of the counts) then numbers the components
// exactly as scipy.ndimage.label does.
//   tiles:    a block per 32 x 64 tile unites the tile's pairs in shared memory from the mask
//             alone and writes each pixel's first pixel of its component within the tile.
//   edges:    one union per pair across tile edges that the row runs do not already imply; find
//             uses path halving (stores an ancestor only) and the link is an atomicMin on a root.
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
constexpr int kTileRows = 64;     // tile_kernel: a tile of kBlockX x kTileRows pixels per block,
constexpr int kTileThreadsY = 8;  // each thread kTileRows / kTileThreadsY of its column's pixels
static_assert(kTileRows % kTileThreadsY == 0 && kTileRows % kBlockX == 0, "whole rows per thread and warps per column");
constexpr int kEdgeWarps = kTileRows / kBlockX;  // tile_edges_kernel: warps per tile column
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

// A forest of parent indices, in global memory (the image's labels; loads and stores past L1,
// which other SMs' stores would leave stale) or in a tile's shared memory (volatile).
struct GlobalForest {
  int32_t* parent;
  __device__ int32_t load(int32_t i) const { return __ldcg(parent + i); }
  __device__ void store(int32_t i, int32_t value) const { __stcg(parent + i, value); }
};
struct SharedForest {
  int32_t* parent;
  __device__ int32_t load(int32_t i) const { return static_cast<volatile int32_t*>(parent)[i]; }
  __device__ void store(int32_t i, int32_t value) const { static_cast<volatile int32_t*>(parent)[i] = value; }
};

// Find with path halving, for the unions (and a tile's finds after its unions). It stores into
// parent[i] only after seeing i is not a root (a non-root never becomes a root again), and what it
// stores is the parent of i's earlier parent: a smaller index of the same component that was an
// ancestor of i. Replacing the edge i->p by i->grand(p) keeps the forest's connectivity, even when
// it overwrites a concurrent atomicMin on the non-root i (that thread then unites i's old parent
// itself, see unite), so the halving can never split a component or link two different ones.
template <typename Forest>
__device__ __forceinline__ int32_t find_halving(const Forest& f, int32_t i) {
  while (true) {
    const int32_t parent = f.load(i);
    if (parent == i) return i;
    const int32_t grand = f.load(parent);
    if (grand == parent) return parent;
    f.store(i, grand);
    i = grand;
  }
}

// Join the trees of a and b: the larger root is re-pointed to the smaller one with atomicMin, so
// entries only ever point to smaller indices. If the "root" was re-linked meanwhile (old != root),
// the atomicMin may have replaced its edge to old by an edge to the other root; the loop then
// unites old with that root, which restores the connectivity before the union returns.
template <typename Forest>
__device__ void unite(const Forest& f, int32_t a, int32_t b) {
  bool done = false;
  while (!done) {
    a = find_halving(f, a);
    b = find_halving(f, b);
    if (a < b) {
      const int32_t old = atomicMin(f.parent + b, a);
      done = old == b;
      b = old;
    } else if (b < a) {
      const int32_t old = atomicMin(f.parent + a, b);
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

// Unites pixel i with its set neighbours in the row above, skipping the pairs that the row runs
// (every pixel joined to its left neighbour) already imply, by induction on x:
//   4-conn: i ~ up follows from i ~ left ~ up-left ~ up when left and up-left are set.
//   8-conn: up is implied when left is set (left's up-right); up-left when up is set (same run
//           above) or left is set (left's up); up-right when up is set (same run above).
// A neighbour the caller does not see (in another tile) is passed as unset: its pair is then
// united, or left to the caller that sees it.
template <int Connectivity, typename Forest>
__device__ __forceinline__ void unite_upward(const Forest& f, int32_t i, int32_t above, bool left, bool up,
                                             bool up_left, bool up_right) {
  if (Connectivity == 4) {
    if (up && !(left && up_left)) unite(f, i, above);
  } else if (up) {
    if (!left) unite(f, i, above);
  } else {
    if (!left && up_left) unite(f, i, above - 1);
    if (up_right) unite(f, i, above + 1);
  }
}

// Lane where `lane`'s horizontal run of set bits in a warp row's `bits` starts (0 when the run
// reaches lane 0; meaningful for set bits only).
__device__ __forceinline__ int run_start_in(uint32_t bits, int lane) {
  const unsigned gaps = ~bits & ((1u << lane) - 1u);  // clear lanes left of this one
  return gaps ? 32 - __clz(gaps) : 0;
}

// The same for the calling lane's run of set pixels. All lanes in `active` must call it.
__device__ __forceinline__ int run_start_lane(bool set, unsigned active) {
  return run_start_in(__ballot_sync(active, set), static_cast<int>(threadIdx.x));
}

// One block per tile of kBlockX x kTileRows pixels: the tile's components from its mask alone, in
// shared memory, then labels[i] = the image index of the first pixel of i's component within the
// tile (-1 off the mask). A warp holds a tile row; each pixel starts joined to its row run's start
// (ballot), then unite_upward unites the pairs within the tile, and each run finds its root once.
// Pairs that cross the tile's edges are tile_edges_kernel's.
template <int Connectivity>
__global__ void __launch_bounds__(kBlockX* kTileThreadsY) tile_kernel(Grid2D g) {
  __shared__ int32_t parent[kTileRows * kBlockX];
  const SharedForest tile{parent};
  __shared__ uint32_t row_bits[kTileRows];
  const int lane = static_cast<int>(threadIdx.x);
  const int x = blockIdx.x * kBlockX + lane;
  const bool column_in = x < g.width;
  for (int64_t tile_y = blockIdx.y; tile_y * kTileRows < g.height; tile_y += gridDim.y) {
    const int y0 = static_cast<int>(tile_y * kTileRows);
    const int rows = min(kTileRows, g.height - y0);
    // Every row's mask byte is loaded before the first ballot: one trip to memory, not one per row.
    constexpr int kRowsPerThread = kTileRows / kTileThreadsY;
    bool in_mask[kRowsPerThread];
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k) {
      const int r = static_cast<int>(threadIdx.y) + k * kTileThreadsY;
      in_mask[k] = column_in && r < rows && g.mask[(y0 + r) * g.width + x] != 0;
    }
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k) {
      const int r = static_cast<int>(threadIdx.y) + k * kTileThreadsY;
      const uint32_t bits = __ballot_sync(0xffffffffu, in_mask[k]);
      if (lane == 0) row_bits[r] = bits;
      parent[r * kBlockX + lane] = in_mask[k] ? r * kBlockX + run_start_in(bits, lane) : -1;
    }
    __syncthreads();
    for (int r = threadIdx.y; r < kTileRows; r += kTileThreadsY) {
      const uint32_t row = row_bits[r];
      if (r == 0 || !((row >> lane) & 1u)) continue;
      const uint32_t up_row = row_bits[r - 1];
      const int i = r * kBlockX + lane, above = i - kBlockX;
      // Neighbours in other tiles count as unset.
      const bool up = (up_row >> lane) & 1u;
      const bool left = lane > 0 && ((row >> (lane - 1)) & 1u);
      const bool up_left = lane > 0 && ((up_row >> (lane - 1)) & 1u);
      const bool up_right = lane < kBlockX - 1 && ((up_row >> (lane + 1)) & 1u);
      unite_upward<Connectivity>(tile, i, above, left, up, up_left, up_right);
    }
    __syncthreads();
    for (int r = threadIdx.y; r < kTileRows; r += kTileThreadsY) {
      const uint32_t row = row_bits[r];
      const bool set = (row >> lane) & 1u;
      const int start = run_start_in(row, lane);
      int root = set && start == lane ? find_halving(tile, r * kBlockX + lane) : -1;
      root = __shfl_sync(0xffffffffu, root, start);
      if (column_in && r < rows) {
        const int32_t first = (y0 + root / kBlockX) * g.width + blockIdx.x * kBlockX + root % kBlockX;
        g.labels[(y0 + r) * g.width + x] = set ? first : -1;
      }
    }
    __syncthreads();  // before the next tile reuses parent and row_bits
  }
}

// The pairs across tile edges, with unite_upward's skips.
// threadIdx.y 0: the tile's top row, whose pairs with the row above all cross; 1 .. kEdgeWarps:
// its left column (the pair with the left neighbour, and 8-conn's up-left below the top row);
// then (8-conn) its right column's up-right below the top row. The mask bytes are all loaded
// before the first union.
template <int Connectivity>
__global__ void tile_edges_kernel(Grid2D g) {
  const GlobalForest forest{g.labels};
  const int x0 = blockIdx.x * kBlockX;
  const int part = threadIdx.y == 0 ? 0 : threadIdx.y <= kEdgeWarps ? 1 : 2;
  const int warp_along = part == 0 ? 0 : static_cast<int>(threadIdx.y) - 1 - (part == 2 ? kEdgeWarps : 0);
  const int along = warp_along * kBlockX + static_cast<int>(threadIdx.x);  // x in the top row, else y
  for (int64_t tile_y = blockIdx.y; tile_y * kTileRows < g.height; tile_y += gridDim.y) {
    const int y0 = static_cast<int>(tile_y * kTileRows);
    const int x = part == 0 ? x0 + along : part == 1 ? x0 : x0 + kBlockX - 1;
    const int y = part == 0 ? y0 : y0 + along;
    if (x >= g.width || y >= g.height) continue;
    const int32_t i = y * g.width + x;
    const bool has_left = x > 0, has_up = y > 0, has_right = x + 1 < g.width;
    const int32_t above = i - g.width;
    const bool set = g.mask[i] != 0;
    const bool left = has_left && g.mask[i - 1];
    const bool up = has_up && g.mask[above];
    const bool up_left = has_up && has_left && g.mask[above - 1];
    const bool up_right = has_up && has_right && g.mask[above + 1];
    if (!set) continue;
    if (part == 1 && left) unite(forest, i, i - 1);
    if (!has_up) continue;
    if (part == 0) {
      unite_upward<Connectivity>(forest, i, above, left, up, up_left, up_right);
    } else if (Connectivity == 8 && y > y0 && !up) {
      if (part == 1 && !left && up_left) unite(forest, i, above - 1);
      if (part == 2 && up_right) unite(forest, i, above + 1);
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

// labels[i] = root, and the root bits. The forest is final (the edges are united), so every entry
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
  const int64_t tile_rows = (gpu.height + kTileRows - 1) / kTileRows;
  const dim3 tiles(grid.x, static_cast<unsigned>(tile_rows < 65535 ? tile_rows : 65535));
  if (connectivity == 4) {
    tile_kernel<4><<<tiles, dim3(kBlockX, kTileThreadsY), 0, gpu.stream>>>(g);
    IMFLOW_CUDA_CHECK_LAUNCH();
    tile_edges_kernel<4><<<tiles, dim3(kBlockX, 1 + kEdgeWarps), 0, gpu.stream>>>(g);
  } else {
    tile_kernel<8><<<tiles, dim3(kBlockX, kTileThreadsY), 0, gpu.stream>>>(g);
    IMFLOW_CUDA_CHECK_LAUNCH();
    tile_edges_kernel<8><<<tiles, dim3(kBlockX, 1 + 2 * kEdgeWarps), 0, gpu.stream>>>(g);
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
