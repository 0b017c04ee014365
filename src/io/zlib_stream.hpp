// Whole-buffer zlib streams (PNG's IDAT data) through libdeflate when imflow is built with it
// (IMFLOW_HAVE_LIBDEFLATE), else through zlib; each thread reuses its own compressor state.
#pragma once
#include <cstddef>
#include <vector>

namespace imflow::detail {

// Inflates the zlib stream `in` into exactly `out_size` bytes at `out`. True only when the stream
// is valid (Adler-32 included), ends exactly at in + in_size and holds exactly out_size bytes.
bool zlib_inflate_exact(const unsigned char* in, size_t in_size, unsigned char* out, size_t out_size);

// Appends the zlib stream of `in` at compression `level` (0 stored .. 9 smallest) to `out`.
// `run_length`: zlib's Z_RLE strategy where zlib does the work (libdeflate has no strategies).
void zlib_deflate(const unsigned char* in, size_t in_size, int level, bool run_length, std::vector<unsigned char>& out);

}  // namespace imflow::detail
