// The catalog's CSV rows on the device (catalog_text.hpp), a thread per cell in each pass so that
// every lane converts one number at a time: the cells' lengths (a warp's lanes on one column);
// a warp per row places its cells (each followed by its separator); a scan places the rows; the
// cells' text (a warp's lanes along a row).
#include <cub/device/device_scan.cuh>
#include <cub/warp/warp_scan.cuh>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "cuda/catalog_text.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_common.cuh"
#include "cuda/measured_image.hpp"
#include "imflow/huge_pages.hpp"
#include "imflow/kernels/csv_row_text.hpp"
#include "imflow/parallel_memory.hpp"

namespace imflow::cuda {

namespace {
constexpr int kTextThreads = 256;
constexpr int kTextWarps = kTextThreads / 32;
constexpr int kCells = kernels::kCsvRowCells;
constexpr size_t kInitialTextBytesPerRow = 512;  // ~450 on the astronomy images

__device__ __forceinline__ int64_t text_rows(const DeviceResults* results, int64_t capacity) {
  const int64_t n = results->nlabels;
  return n < capacity ? n : capacity;
}

// Pass 1: each cell's length into cell_at.
__global__ void __launch_bounds__(kTextThreads)
    cell_lengths_kernel(const DeviceSource* rows, const DeviceResults* results, int64_t capacity,
                        const uint64_t* powers, uint16_t* cell_at) {
  const int64_t count = text_rows(results, capacity);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kTextThreads + threadIdx.x; i < count * kCells;
       i += static_cast<int64_t>(gridDim.x) * kTextThreads) {
    // A warp's lanes: one cell of consecutive rows, so they take the same branches (lanes on
    // neighbouring cells of a row diverged down to 1.5 active threads per warp, 9.7x the time).
    const int64_t r = i % count;
    const int cell = static_cast<int>(i / count);
    cell_at[r * kCells + cell] = static_cast<uint16_t>(kernels::csv_cell_length(rows[r], cell, powers));
  }
}

// A row's cells are placed by a scan over the warp's lanes (shuffles only: no shared memory).
using LaneScan = cub::WarpScan<uint32_t>;

// Pass 2, a warp per row: the cells' lengths become their offsets in the row (lane l has cells
// l and 32 + l), the row's length goes into row_ends (0 past the catalog's rows).
__global__ void __launch_bounds__(kTextThreads) row_layout_kernel(const DeviceResults* results, int64_t capacity,
                                                                 uint16_t* cell_at, uint32_t* row_ends) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t count = text_rows(results, capacity);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kTextWarps + threadIdx.x / 32; r < capacity;
       r += static_cast<int64_t>(gridDim.x) * kTextWarps) {
    uint32_t length = 0;
    if (r < count) {
      uint16_t* row = cell_at + r * kCells;
      const bool has_second = lane < kCells - 32;
      const uint32_t first_span = row[lane] + 1u, second_span = has_second ? row[32 + lane] + 1u : 0u;
      LaneScan::TempStorage storage;
      uint32_t first_at = 0, second_at = 0, firsts = 0, seconds = 0;
      LaneScan(storage).ExclusiveSum(first_span, first_at, firsts);
      LaneScan(storage).ExclusiveSum(second_span, second_at, seconds);
      row[lane] = static_cast<uint16_t>(first_at);
      if (has_second) row[32 + lane] = static_cast<uint16_t>(firsts + second_at);
      length = firsts + seconds;
    }
    if (lane == 0) row_ends[r] = length;
  }
}

// Pass 3 (row_ends now the running sums): each cell's text and separator, and each row's mark,
// where the whole text fits.
__global__ void __launch_bounds__(kTextThreads) cell_text_kernel(const DeviceSource* rows, DeviceResults* results,
                                                                int64_t capacity, const uint64_t* powers,
                                                                const uint16_t* cell_at, const uint32_t* row_ends,
                                                                size_t text_capacity, char* text, uint64_t* marks) {
  const int64_t count = text_rows(results, capacity);
  const uint64_t total = count > 0 ? row_ends[count - 1] : 0;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    results->csv_text_bytes = total <= text_capacity ? static_cast<long long>(total) : -1;
  }
  if (total > text_capacity) return;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kTextThreads + threadIdx.x; i < count * kCells;
       i += static_cast<int64_t>(gridDim.x) * kTextThreads) {
    const int64_t r = i / kCells;  // a warp's lanes: neighbouring cells, whose bytes share cache lines
    const int cell = static_cast<int>(i % kCells);
    const uint64_t start = r > 0 ? row_ends[r - 1] : 0;
    char* end = kernels::write_csv_cell(text + start + cell_at[i], rows[r], cell, powers);
    *end = cell == kCells - 1 ? '\n' : ',';
    if (cell == 0) {
      const uint16_t* row = cell_at + r * kCells;
      marks[r] = CatalogCsvText::row_mark(start, row[kernels::kCsvRaCell], row[kernels::kCsvErrthetaCell]);
    }
  }
}

size_t rounded_to_16(size_t bytes) { return (bytes + 15) / 16 * 16; }

void reserve_text(CatalogTextState& state, size_t bytes) {
  state.text_capacity = rounded_to_16(bytes);
  state.text.reserve(state.text_capacity);
  state.text_host.reserve(state.text_capacity);
}
}  // namespace

bool want_catalog_text(GpuContext& gpu) {
  if (!gpu.has_catalog || gpu.has_photometry || two_pass_measure(gpu)) return false;
  if (!gpu.catalog_text) {
    gpu.catalog_text = std::make_shared<CatalogTextState>();
    CatalogTextState& state = *gpu.catalog_text;
    state.powers.reserve(kernels::kDecimalPowerWords);
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(state.powers.data(), kernels::shortest_decimal_powers(),
                                      kernels::kDecimalPowerWords * sizeof(uint64_t), cudaMemcpyHostToDevice,
                                      gpu.stream));
    const auto rows = static_cast<size_t>(std::min<int64_t>(gpu.catalog_capacity, 8192));
    reserve_text(state, rows * kInitialTextBytesPerRow);
  }
  CatalogTextState& state = *gpu.catalog_text;
  if (state.rows_capacity < gpu.catalog_capacity) {
    const auto rows = static_cast<size_t>(gpu.catalog_capacity);
    state.rows.reserve(rows);
    state.row_ends.reserve(rows);
    state.cell_at.reserve(rows * kCells);
    state.marks.reserve(rows);
    state.marks_host.reserve(rows);
    state.rows_capacity = gpu.catalog_capacity;
  }
  gpu.has_catalog_text = true;
  return true;
}

DeviceSource* catalog_text_rows(GpuContext& gpu) {
  return gpu.has_catalog_text ? gpu.catalog_text->rows.data() : nullptr;
}

void enqueue_catalog_text(GpuContext& gpu) {
  CatalogTextState& state = *gpu.catalog_text;
  const int64_t capacity = gpu.catalog_capacity;
  const int64_t most_blocks = static_cast<int64_t>(gpu.sm_count) * 16;
  const int cell_blocks = detail::blocks_for(capacity * kCells, kTextThreads, most_blocks);
  const int row_blocks = detail::blocks_for(capacity, kTextWarps, most_blocks);
  cell_lengths_kernel<<<cell_blocks, kTextThreads, 0, gpu.stream>>>(state.rows.data(), gpu.results.data(), capacity,
                                                                    state.powers.data(), state.cell_at.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  row_layout_kernel<<<row_blocks, kTextThreads, 0, gpu.stream>>>(gpu.results.data(), capacity, state.cell_at.data(),
                                                                 state.row_ends.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  size_t temp_bytes = 0;
  IMFLOW_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, state.row_ends.data(), state.row_ends.data(),
                                                  static_cast<int>(capacity), gpu.stream));
  gpu.scratch.reserve(temp_bytes);
  IMFLOW_CUDA_CHECK(cub::DeviceScan::InclusiveSum(gpu.scratch.data(), temp_bytes, state.row_ends.data(),
                                                  state.row_ends.data(), static_cast<int>(capacity), gpu.stream));
  cell_text_kernel<<<cell_blocks, kTextThreads, 0, gpu.stream>>>(state.rows.data(), gpu.results.data(), capacity,
                                                                 state.powers.data(), state.cell_at.data(),
                                                                 state.row_ends.data(), state.text_capacity,
                                                                 state.text.data(), state.marks.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  // The text's length follows the results enqueue_download copied before the catalog rows; the
  // text and marks as long as the last item's and a quarter more (collect copies any rest).
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(&gpu.results_host.data()->csv_text_bytes, &gpu.results.data()->csv_text_bytes,
                                    sizeof(long long), cudaMemcpyDeviceToHost, gpu.stream));
  state.copied_bytes = std::min(state.expected_bytes, state.text_capacity);
  state.copied_rows = std::min(state.expected_rows, capacity);
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(state.text_host.data(), state.text.data(), state.copied_bytes,
                                    cudaMemcpyDeviceToHost, gpu.stream));
  IMFLOW_CUDA_CHECK(cudaMemcpyAsync(state.marks_host.data(), state.marks.data(),
                                    static_cast<size_t>(state.copied_rows) * sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                    gpu.stream));
}

std::shared_ptr<const CatalogCsvText> collect_catalog_text(GpuContext& gpu, int64_t count) {
  if (!gpu.has_catalog_text || count > gpu.catalog_text->rows_capacity) return nullptr;
  CatalogTextState& state = *gpu.catalog_text;
  const long long bytes = gpu.results_host.data()->csv_text_bytes;
  if (bytes < 0) {  // outgrown: the host writes this catalog; room for the next one this size
    reserve_text(state, std::max(2 * state.text_capacity, static_cast<size_t>(count) * kernels::kCsvRowMaxChars / 2));
    return nullptr;
  }
  const auto text_bytes = static_cast<size_t>(bytes);
  if (text_bytes > state.copied_bytes || count > state.copied_rows) {  // longer than the last: the rest now
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(state.text_host.data(), state.text.data(), text_bytes, cudaMemcpyDeviceToHost,
                                      gpu.stream));
    IMFLOW_CUDA_CHECK(cudaMemcpyAsync(state.marks_host.data(), state.marks.data(),
                                      static_cast<size_t>(count) * sizeof(uint64_t), cudaMemcpyDeviceToHost, gpu.stream));
    IMFLOW_CUDA_CHECK(cudaStreamSynchronize(gpu.stream));
  }
  state.expected_bytes = text_bytes + text_bytes / 4 + 4096;
  state.expected_rows = count + count / 4 + 64;
  auto text = std::make_shared<CatalogCsvText>();
  text->bytes.reset(new char[text_bytes]);  // not filled: the copy is the first touch
  text->size = text_bytes;
  advise_huge_pages(text->bytes.get(), text_bytes);
  copy_on_all_threads(text->bytes.get(), state.text_host.data(), text_bytes);
  text->rows.assign(state.marks_host.data(), state.marks_host.data() + count);
  // Each row's cells in order within the text (what the CSV writer's copies rely on).
  for (size_t r = 0; r < text->rows.size(); ++r) {
    const size_t start = text->start(r), end = text->end(r);
    if (end < start || end > text->size || text->errtheta_at(r) <= text->ra_at(r) + 1 ||
        start + text->errtheta_at(r) >= end) {
      throw std::logic_error("catalog text: row " + std::to_string(r) + " is not laid out as its marks say");
    }
  }
  return text;
}

}  // namespace imflow::cuda
