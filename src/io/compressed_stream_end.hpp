// How a gzip or bzip2 file's stream ends, for a FITS file CFITSIO could not open or read short:
// CFITSIO decompresses only the first gzip member or bzip2 stream (RFC 1952 allows a series of
// members: bgzip, `cat a.gz b.gz` and parallel compressors such as pbzip2 write several) and takes
// a stream cut short or corrupt as shorter data, which it then reports as a short read, failed
// memory or a damaged header.
#pragma once
#include <filesystem>
#include <string>

namespace imflow::detail {

enum class StreamEnd {
  one,           // a complete stream and nothing after it
  several,       // another member or stream follows the first one's end
  cut_short,     // the file ends inside the first one (an interrupted transfer)
  corrupt,       // the decompressor rejects the stream (bad data or check value)
  other_format,  // not this compression, or the file cannot be read
};

// The first member decompressed with zlib (its output discarded), then what follows it.
StreamEnd gzip_stream_end(const std::filesystem::path& path);

// The first stream decompressed with libbz2 (its output discarded), then what follows it.
StreamEnd bzip2_stream_end(const std::filesystem::path& path);

// Why a gzip or bzip2 file failed, as a phrase ("its bzip2 stream ends early (truncated file)"),
// empty when its stream is whole and alone, or it is neither: CFITSIO's account then stands.
std::string compressed_stream_problem(const std::filesystem::path& path);

}  // namespace imflow::detail
