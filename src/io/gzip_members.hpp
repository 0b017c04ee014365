// How a gzip file's stream ends, for a read that ran short through CFITSIO, which inflates only the
// first member and takes a stream cut short as a shorter file: RFC 1952 allows a series of members
// (bgzip, `cat a.gz b.gz` and parallel compressors write them).
#pragma once
#include <filesystem>

namespace imflow::detail {

enum class GzipEnd {
  one_member,      // a complete stream and nothing after it
  several_members, // another member follows the first one's end
  cut_short,       // the file ends inside the first member (an interrupted transfer)
  corrupt,         // zlib rejects the stream (bad data or check value)
  unreadable,      // not gzip, or the file cannot be read
};

// The first member inflated with zlib (its output discarded), then what follows it.
GzipEnd gzip_stream_end(const std::filesystem::path& path);

}  // namespace imflow::detail
