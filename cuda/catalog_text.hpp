// The catalog's CSV rows written on the device (kernels/csv_row_text.hpp), so that the host's
// CSV writer copies text instead of formatting ~100,000 numbers per image: a thread per cell
// measures, scans place the cells and the rows, a thread per cell writes, and the copy engine
// brings the text over.
#pragma once
#include <cstdint>

#include "cuda/gpu_context.hpp"
#include "imflow/catalog_text.hpp"

namespace imflow::cuda {

// One slot's text buffers, created by its first catalog text and kept (they only grow).
struct CatalogTextState {
  DeviceBuffer<uint64_t> powers;       // Schubfach's powers of ten (kernels/shortest_decimal.hpp)
  DeviceBuffer<DeviceSource> rows;     // the catalog rows, written beside catalog_host
  DeviceBuffer<uint32_t> row_ends;     // per row of the capacity: its length, then its end in the text
  DeviceBuffer<uint16_t> cell_at;      // per row and cell: the cell's length, then its offset in the row
  DeviceBuffer<uint64_t> marks;        // CatalogCsvText::rows
  DeviceBuffer<char> text;
  PinnedBuffer<char> text_host;
  PinnedBuffer<uint64_t> marks_host;
  size_t text_capacity = 0;            // bytes of text and text_host
  int64_t rows_capacity = 0;           // rows of `rows`, row_ends, marks and marks_host
  // What the stream copies (the last item's text and rows and a quarter more; collect copies any
  // rest), and what it copied for the current item.
  size_t expected_bytes = size_t{2} << 20;
  int64_t expected_rows = 8192;
  size_t copied_bytes = 0;
  int64_t copied_rows = 0;
};

// Where measure's rows kernel also writes the rows (nullptr: the CSV text is not wanted).
DeviceSource* catalog_text_rows(GpuContext& gpu);

// Called by enqueue_download after the catalog rows (not for photometry or dual-image catalogs,
// whose rows the host completes): mark the slot for CSV text, so that the rows kernel keeps a
// device copy of the rows. Returns whether it did.
bool want_catalog_text(GpuContext& gpu);

// After the rows kernel: enqueue the rows' text and its copy into text_host (results.csv_text_bytes
// its length, or -1 where it outgrew text_capacity). Never synchronizes.
void enqueue_catalog_text(GpuContext& gpu);

// After gpu.stream completed, for the item's `count` rows: the text (copying what the stream did
// not: synchronizes then), or nullptr where none was written or it outgrew the buffers (which
// then grow for the next item: the host writes this one).
std::shared_ptr<const CatalogCsvText> collect_catalog_text(GpuContext& gpu, int64_t count);

}  // namespace imflow::cuda
