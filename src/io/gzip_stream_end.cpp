// gzip_stream_end: inflate the first member with zlib, then look for another header.
#include "compressed_stream_end.hpp"

#include <zlib.h>

#include <cstdio>
#include <memory>
#include <vector>

namespace imflow::detail {

StreamEnd gzip_stream_end(const std::filesystem::path& path) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) return StreamEnd::other_format;
  unsigned char start[2];
  if (std::fread(start, 1, 2, file.get()) != 2 || start[0] != 0x1f || start[1] != 0x8b) return StreamEnd::other_format;
  std::rewind(file.get());
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) return StreamEnd::other_format;  // gzip wrapper only
  const std::unique_ptr<z_stream, int (*)(z_stream*)> end_stream(&stream, inflateEnd);
  std::vector<unsigned char> in(1 << 16), out(1 << 18);
  int result = Z_OK;
  while (result != Z_STREAM_END) {
    if (stream.avail_in == 0) {
      stream.avail_in = static_cast<uInt>(std::fread(in.data(), 1, in.size(), file.get()));
      stream.next_in = in.data();
      if (stream.avail_in == 0) return stream.total_in == 0 ? StreamEnd::other_format : StreamEnd::cut_short;
    }
    stream.next_out = out.data();
    stream.avail_out = static_cast<uInt>(out.size());
    result = inflate(&stream, Z_NO_FLUSH);
    if (result != Z_OK && result != Z_STREAM_END) return stream.total_in == 0 ? StreamEnd::other_format : StreamEnd::corrupt;
  }
  // The next two bytes after the member's trailer: another member's magic number?
  unsigned char magic[2];
  size_t have = 0;
  while (have < 2 && stream.avail_in > 0) {
    magic[have++] = *stream.next_in++;
    --stream.avail_in;
  }
  if (have < 2) have += std::fread(magic + have, 1, 2 - have, file.get());
  return have == 2 && magic[0] == 0x1f && magic[1] == 0x8b ? StreamEnd::several : StreamEnd::one;
}

}  // namespace imflow::detail
