// When SExtractor's scan releases objects from CLEAN's list (clean_style: sextractor), one rule
// for the CPU's and the GPU's CLEAN: after each line once its image buffer (MEMORY_BUFSIZE lines)
// slides, the objects whose margin (addcleanobj's ycmin) lies at or above the buffer's first line.
#pragma once
#include <cstdint>

#include "imflow/kernels/host_device.hpp"

namespace imflow::kernels {

// field.c's strip margin: 1 line, or behind a detection filter its height / 2 + 1 (the blank lag,
// DeblendParams::blank_lag).
IMFLOW_HOST_DEVICE inline int64_t sextractor_strip_margin(int blank_lag) { return blank_lag > 1 ? blank_lag : 1; }

// Whether the scan releases objects after line `line` of an image `height` lines tall, and the
// buffer's first line then (`first_line`). A buffer of S < height lines with a strip margin M
// (readimage.c: stripysclim = S - M) slides from line S - M on: the releases follow lines
// S - M - 1 .. height - M - 2, the first line L - (S - M - 1); an image no taller than the buffer
// releases once, after its last line, down to line 0.
IMFLOW_HOST_DEVICE inline bool sextractor_releases_after(int64_t line, int64_t height, int64_t buffer_lines,
                                                         int64_t strip_margin, int64_t& first_line) {
  first_line = 0;
  if (height <= buffer_lines) return line == height - 1;
  const int64_t start = buffer_lines - strip_margin - 1;
  if (line < start || line > height - strip_margin - 2) return false;
  first_line = line - start;
  return true;
}

}  // namespace imflow::kernels
