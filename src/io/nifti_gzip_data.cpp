// read_gzip_data, check_gzip_stream: zlib's gzread in chunks, its error state read at the end.
#include "nifti_gzip_data.hpp"

#include <zlib.h>

#include <algorithm>
#include <memory>
#include <string>

#include "imflow/errors.hpp"

namespace imflow::detail {

namespace {
struct GzipClose {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzipFile = std::unique_ptr<gzFile_s, GzipClose>;

GzipFile open_gzip(const std::filesystem::path& data_file, const std::filesystem::path& item) {
  GzipFile file(gzopen(data_file.c_str(), "rb"));
  if (!file) throw InputError(item.string() + ": cannot open the NIfTI data");
  gzbuffer(file.get(), 1 << 18);
  return file;
}

// Throws when zlib rejected the stream; a stream cut short (Z_BUF_ERROR, "unexpected end of
// file") is left to the caller, which finds the bytes missing.
void throw_if_corrupt(gzFile file, const std::filesystem::path& data_file, const std::filesystem::path& item) {
  int code = Z_OK;
  std::string reason = gzerror(file, &code);  // "PATH: reason"
  if (code == Z_OK || code == Z_BUF_ERROR) return;
  if (reason.starts_with(data_file.string() + ": ")) reason.erase(0, data_file.string().size() + 2);
  throw InputError(item.string() + ": corrupt gzip stream (" + reason + ")");
}

// Inflates what is left of the stream, discarding it.
void inflate_to_end(gzFile file) {
  std::vector<char> sink(size_t{1} << 20);
  while (gzread(file, sink.data(), static_cast<unsigned>(sink.size())) > 0) {
  }
}
}  // namespace

std::vector<unsigned char> read_gzip_data(const std::filesystem::path& data_file, int64_t offset, int64_t bytes,
                                          bool to_stream_end, const std::filesystem::path& item) {
  const GzipFile file = open_gzip(data_file, item);
  std::vector<unsigned char> data(static_cast<size_t>(bytes));
  size_t got = 0;
  if (gzseek(file.get(), static_cast<z_off_t>(offset), SEEK_SET) >= 0) {
    // In chunks: gzread drops what one call inflated when it then meets an error.
    constexpr size_t kChunk = size_t{4} << 20;
    while (got < data.size()) {
      const size_t want = std::min(kChunk, data.size() - got);
      const int read = gzread(file.get(), data.data() + got, static_cast<unsigned>(want));
      if (read <= 0) break;
      got += static_cast<size_t>(read);
    }
    if (to_stream_end && got == data.size()) inflate_to_end(file.get());
  }
  throw_if_corrupt(file.get(), data_file, item);
  data.resize(got);
  return data;
}

void check_gzip_stream(const std::filesystem::path& data_file, const std::filesystem::path& item) {
  const GzipFile file = open_gzip(data_file, item);
  inflate_to_end(file.get());
  throw_if_corrupt(file.get(), data_file, item);
}

}  // namespace imflow::detail
