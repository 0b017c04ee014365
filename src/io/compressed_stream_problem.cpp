// compressed_stream_problem: the stream's end (compressed_stream_end.hpp) said in words.
#include "compressed_stream_end.hpp"

namespace imflow::detail {

std::string compressed_stream_problem(const std::filesystem::path& path) {
  switch (gzip_stream_end(path)) {
    case StreamEnd::several:
      return "the file is a gzip of several members (as bgzip or `cat a.gz b.gz` write), of which CFITSIO reads only "
             "the first; gunzip it, or recompress it with gzip as one member";
    case StreamEnd::cut_short: return "its gzip stream ends early (truncated file)";
    case StreamEnd::corrupt: return "its gzip stream is corrupt";
    case StreamEnd::one: return "";
    case StreamEnd::other_format: break;
  }
  switch (bzip2_stream_end(path)) {
    case StreamEnd::several:
      return "the file is a bzip2 of several streams (as pbzip2 or `cat a.bz2 b.bz2` write), of which CFITSIO "
             "reads only the first; decompress it with bunzip2";
    case StreamEnd::cut_short: return "its bzip2 stream ends early (truncated file)";
    case StreamEnd::corrupt: return "its bzip2 stream is corrupt (bad data or CRC)";
    default: return "";
  }
}

}  // namespace imflow::detail
