// bzip2_stream_end: decompress the first stream with libbz2, then look for another stream's magic.
#include "compressed_stream_end.hpp"

#include <bzlib.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace imflow::detail {

StreamEnd bzip2_stream_end(const std::filesystem::path& path) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) return StreamEnd::other_format;
  std::vector<char> in(1 << 16), out(1 << 18);
  size_t have = std::fread(in.data(), 1, in.size(), file.get());
  if (have < 3 || std::memcmp(in.data(), "BZh", 3) != 0) return StreamEnd::other_format;
  bz_stream stream{};
  if (BZ2_bzDecompressInit(&stream, 0, 0) != BZ_OK) return StreamEnd::other_format;
  const std::unique_ptr<bz_stream, int (*)(bz_stream*)> end_stream(&stream, BZ2_bzDecompressEnd);
  stream.next_in = in.data();
  stream.avail_in = static_cast<unsigned>(have);
  int result = BZ_OK;
  while (result != BZ_STREAM_END) {
    if (stream.avail_in == 0) {
      have = std::fread(in.data(), 1, in.size(), file.get());
      if (have == 0) return StreamEnd::cut_short;
      stream.next_in = in.data();
      stream.avail_in = static_cast<unsigned>(have);
    }
    stream.next_out = out.data();
    stream.avail_out = static_cast<unsigned>(out.size());
    result = BZ2_bzDecompress(&stream);
    if (result != BZ_OK && result != BZ_STREAM_END) return StreamEnd::corrupt;
  }
  // The next three bytes after the stream: another stream's "BZh"?
  char magic[3];
  size_t got = 0;
  while (got < 3 && stream.avail_in > 0) {
    magic[got++] = *stream.next_in++;
    --stream.avail_in;
  }
  if (got < 3) got += std::fread(magic + got, 1, 3 - got, file.get());
  return got == 3 && std::memcmp(magic, "BZh", 3) == 0 ? StreamEnd::several : StreamEnd::one;
}

}  // namespace imflow::detail
