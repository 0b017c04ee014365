// The catalog's CSV rows on the device (catalog_text.hpp): a warp per row, its lane l writing cell l
// (and lanes 0-3 cells 32-35), each cell followed by its separator. A first pass only measures
// the cells, a scan places the rows, a second pass writes them.
#include <cub/device/device_scan.cuh>
#include <cub/warp/warp_scan.cuh>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "cuda/catalog_text.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_common.cuh"
#include "imflow/kernels/csv_row_text.hpp"

namespace imflow::cuda {

namespace {
constexpr int kTextThreads = 256;
constexpr int kTextWarps = kTextThreads / 32;
constexpr unsigned kAllLanes = 0xFFFFFFFFu;
constexpr size_t kInitialTextBytesPerRow = 512;  // ~450 on the astronomy images

__device__ __forceinline__ int64_t text_rows(const DeviceResults* results, int64_t capacity) {
  const int64_t n = results->nlabels;
  return n < capacity ? n : capacity;
}

// A row's cells are placed by a scan over the warp's lanes (shuffles only: no shared memory).
using LaneScan = cub::WarpScan<uint32_t>;

// A lane's two cells' offsets in the row (each cell with its separator), and the row's length.
struct RowCells {
  uint32_t first_length = 0, second_length = 0;
  uint32_t first_at = 0, second_at = 0, length = 0;
};

__device__ __forceinline__ void lay_out_row(const DeviceSource& s, int lane, const uint64_t* powers, RowCells& cells) {
  cells.first_length = static_cast<uint32_t>(kernels::csv_cell_length(s, lane, powers));
  const bool has_second = lane < kernels::kCsvRowCells - 32;
  if (has_second) cells.second_length = static_cast<uint32_t>(kernels::csv_cell_length(s, 32 + lane, powers));
  const uint32_t first_span = cells.first_length + 1, second_span = has_second ? cells.second_length + 1 : 0;
  LaneScan::TempStorage storage;
  uint32_t firsts = 0, seconds = 0;
  LaneScan(storage).ExclusiveSum(first_span, cells.first_at, firsts);
  LaneScan(storage).ExclusiveSum(second_span, cells.second_at, seconds);
  cells.second_at += firsts;
  cells.length = firsts + seconds;
}

// Pass 1: each row's length into row_ends (0 past the catalog's rows).
__global__ void __launch_bounds__(kTextThreads) row_lengths_kernel(const DeviceSource* rows, const DeviceResults* results,
                                                                  int64_t capacity, const uint64_t* powers,
                                                                  uint32_t* row_ends) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t count = text_rows(results, capacity);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kTextWarps + threadIdx.x / 32; r < capacity;
       r += static_cast<int64_t>(gridDim.x) * kTextWarps) {
    uint32_t length = 0;
    if (r < count) {
      RowCells cells;
      lay_out_row(rows[r], lane, powers, cells);
      length = cells.length;
    }
    if (lane == 0) row_ends[r] = length;
  }
}

// Pass 2 (row_ends now the running sums): each row's text and mark, where the whole text fits.
__global__ void __launch_bounds__(kTextThreads) row_text_kernel(const DeviceSource* rows, DeviceResults* results,
                                                               int64_t capacity, const uint64_t* powers,
                                                               const uint32_t* row_ends, size_t text_capacity,
                                                               char* text, uint64_t* marks) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t count = text_rows(results, capacity);
  const uint64_t total = count > 0 ? row_ends[count - 1] : 0;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    results->csv_text_bytes = total <= text_capacity ? static_cast<long long>(total) : -1;
  }
  if (total > text_capacity) return;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kTextWarps + threadIdx.x / 32; r < count;
       r += static_cast<int64_t>(gridDim.x) * kTextWarps) {
    const DeviceSource& source = rows[r];
    RowCells cells;
    lay_out_row(source, lane, powers, cells);
    const uint64_t start = r > 0 ? row_ends[r - 1] : 0;
    char* row = text + start;
    char* end = kernels::write_csv_cell(row + cells.first_at, source, lane, powers);
    *end = ',';
    if (lane < kernels::kCsvRowCells - 32) {
      end = kernels::write_csv_cell(row + cells.second_at, source, 32 + lane, powers);
      *end = lane == kernels::kCsvRowCells - 33 ? '\n' : ',';
    }
    const uint32_t ra_at = __shfl_sync(kAllLanes, cells.first_at, kernels::kCsvRaCell);
    const uint32_t errtheta_at = __shfl_sync(kAllLanes, cells.first_at, kernels::kCsvErrthetaCell);
    if (lane == 0) marks[r] = CatalogCsvText::row_mark(start, ra_at, errtheta_at);
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
  if (!gpu.has_catalog || gpu.has_photometry || gpu.dual_image) return false;
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
  const int blocks = detail::blocks_for(capacity, kTextWarps, static_cast<int64_t>(gpu.sm_count) * 16);
  row_lengths_kernel<<<blocks, kTextThreads, 0, gpu.stream>>>(state.rows.data(), gpu.results.data(), capacity,
                                                              state.powers.data(), state.row_ends.data());
  IMFLOW_CUDA_CHECK_LAUNCH();
  size_t temp_bytes = 0;
  IMFLOW_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, state.row_ends.data(), state.row_ends.data(),
                                                  static_cast<int>(capacity), gpu.stream));
  gpu.scratch.reserve(temp_bytes);
  IMFLOW_CUDA_CHECK(cub::DeviceScan::InclusiveSum(gpu.scratch.data(), temp_bytes, state.row_ends.data(),
                                                  state.row_ends.data(), static_cast<int>(capacity), gpu.stream));
  row_text_kernel<<<blocks, kTextThreads, 0, gpu.stream>>>(state.rows.data(), gpu.results.data(), capacity,
                                                           state.powers.data(), state.row_ends.data(),
                                                           state.text_capacity, state.text.data(), state.marks.data());
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
  text->text.assign(state.text_host.data(), text_bytes);
  text->rows.assign(state.marks_host.data(), state.marks_host.data() + count);
  // Each row's cells in order within the text (what the CSV writer's copies rely on).
  for (size_t r = 0; r < text->rows.size(); ++r) {
    const size_t start = text->start(r), end = text->end(r);
    if (end < start || end > text->text.size() || text->errtheta_at(r) <= text->ra_at(r) + 1 ||
        start + text->errtheta_at(r) >= end) {
      throw std::logic_error("catalog text: row " + std::to_string(r) + " is not laid out as its marks say");
    }
  }
  return text;
}

}  // namespace imflow::cuda
