// A catalog's CSV rows as the GPU wrote them (kernels/csv_row_text.hpp): every cell but ra, dec
// and errtheta, which the CSV writer fills in from the image's WCS and the host's atan2.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace imflow {

struct CatalogCsvText {
  // The rows in catalog order, each ending in '\n', with empty ra, dec and errtheta cells: `size`
  // bytes at `bytes` (allocated without being filled: a mosaic's are copied in on all threads).
  std::unique_ptr<char[]> bytes;
  size_t size = 0;
  // Per row: its offset in text() (bits 0-31), then where its ra cell goes (bits 32-47) and its
  // errtheta cell (bits 48-63), both counted from the row's start; dec goes one past ra's comma.
  std::vector<uint64_t> rows;

  static constexpr uint64_t row_mark(uint64_t start, uint64_t ra_at, uint64_t errtheta_at) {
    return start | (ra_at << 32) | (errtheta_at << 48);
  }
  size_t start(size_t row) const { return static_cast<size_t>(rows[row] & 0xFFFFFFFFu); }
  std::string_view text() const { return {bytes.get(), size}; }
  // Holds a copy of `from` (one thread's copy: tests, small texts).
  void set_text(std::string_view from) {
    bytes.reset(new char[from.size()]);
    size = from.size();
    if (size != 0) std::memcpy(bytes.get(), from.data(), size);
  }
  size_t end(size_t row) const { return row + 1 < rows.size() ? start(row + 1) : size; }
  size_t ra_at(size_t row) const { return static_cast<size_t>((rows[row] >> 32) & 0xFFFFu); }
  size_t errtheta_at(size_t row) const { return static_cast<size_t>(rows[row] >> 48); }
};

}  // namespace imflow
