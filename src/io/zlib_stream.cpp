// zlib streams through libdeflate (faster whole-buffer inflate and deflate) or zlib (zlib_stream.hpp).
#include "zlib_stream.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
#include <memory>
#include <new>

#ifdef IMFLOW_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

namespace imflow::detail {

#ifdef IMFLOW_HAVE_LIBDEFLATE
namespace {
struct FreeDecompressor {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};
struct FreeCompressor {
  void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};
}  // namespace

bool zlib_inflate_exact(const unsigned char* in, size_t in_size, unsigned char* out, size_t out_size) {
  thread_local std::unique_ptr<libdeflate_decompressor, FreeDecompressor> decompressor;
  if (!decompressor) decompressor.reset(libdeflate_alloc_decompressor());
  if (!decompressor) throw std::bad_alloc();
  size_t used = 0;
  // Without actual_out, libdeflate succeeds only when the stream holds exactly out_size bytes.
  return libdeflate_zlib_decompress_ex(decompressor.get(), in, in_size, out, out_size, &used, nullptr) ==
             LIBDEFLATE_SUCCESS &&
         used == in_size;
}

void zlib_deflate(const unsigned char* in, size_t in_size, int level, bool, std::vector<unsigned char>& out) {
  thread_local std::array<std::unique_ptr<libdeflate_compressor, FreeCompressor>, 10> compressors;
  auto& compressor = compressors.at(static_cast<size_t>(level));
  if (!compressor) compressor.reset(libdeflate_alloc_compressor(level));
  if (!compressor) throw std::bad_alloc();
  const size_t at = out.size();
  out.resize(at + libdeflate_zlib_compress_bound(compressor.get(), in_size));
  const size_t size = libdeflate_zlib_compress(compressor.get(), in, in_size, out.data() + at, out.size() - at);
  if (size == 0) throw std::bad_alloc();  // the bound was not enough: cannot happen
  out.resize(at + size);
}
#else
namespace {
struct Inflater {
  z_stream stream{};
  bool ready = false;
  ~Inflater() {
    if (ready) inflateEnd(&stream);
  }
};
struct Deflater {
  z_stream stream{};
  int level = -1;
  bool run_length = false;
  ~Deflater() {
    if (level >= 0) deflateEnd(&stream);
  }
};
constexpr size_t kStep = UINT_MAX;  // zlib counts in uInt
}  // namespace

bool zlib_inflate_exact(const unsigned char* in, size_t in_size, unsigned char* out, size_t out_size) {
  thread_local Inflater inflater;
  z_stream& s = inflater.stream;
  if (!inflater.ready) {
    if (inflateInit(&s) != Z_OK) throw std::bad_alloc();
    inflater.ready = true;
  } else if (inflateReset(&s) != Z_OK) {
    return false;
  }
  size_t in_left = in_size, out_left = out_size;
  s.next_in = const_cast<unsigned char*>(in);
  s.next_out = out;
  int status = Z_OK;
  while (status == Z_OK) {  // Z_OK means progress; Z_BUF_ERROR (none possible) ends it as a failure
    const auto in_now = static_cast<uInt>(std::min(in_left, kStep));
    const auto out_now = static_cast<uInt>(std::min(out_left, kStep));
    s.avail_in = in_now;
    s.avail_out = out_now;
    status = inflate(&s, Z_NO_FLUSH);
    in_left -= in_now - s.avail_in;
    out_left -= out_now - s.avail_out;
  }
  if (status == Z_MEM_ERROR) throw std::bad_alloc();
  return status == Z_STREAM_END && in_left == 0 && out_left == 0;
}

void zlib_deflate(const unsigned char* in, size_t in_size, int level, bool run_length, std::vector<unsigned char>& out) {
  thread_local Deflater deflater;
  z_stream& s = deflater.stream;
  if (deflater.level != level || deflater.run_length != run_length) {
    if (deflater.level >= 0) deflateEnd(&s);
    deflater.level = -1;
    s = z_stream{};
    if (deflateInit2(&s, level, Z_DEFLATED, 15, 8, run_length ? Z_RLE : Z_DEFAULT_STRATEGY) != Z_OK) throw std::bad_alloc();
    deflater.level = level;
    deflater.run_length = run_length;
  } else if (deflateReset(&s) != Z_OK) {
    throw std::bad_alloc();
  }
  const size_t at = out.size();
  // Fed in steps of at most 2 GiB (zlib counts in uInt), the output sized by deflateBound for each.
  size_t in_left = in_size;
  s.next_in = const_cast<unsigned char*>(in);
  int status = Z_OK;
  size_t written = at;
  while (status != Z_STREAM_END) {
    const auto in_now = static_cast<uInt>(std::min(in_left, kStep / 2));
    const int flush = in_left == in_now ? Z_FINISH : Z_NO_FLUSH;
    out.resize(written + deflateBound(&s, in_now) + 64);
    s.next_out = out.data() + written;
    s.avail_in = in_now;
    const auto out_now = static_cast<uInt>(std::min(out.size() - written, kStep));
    s.avail_out = out_now;
    status = deflate(&s, flush);
    if (status == Z_STREAM_ERROR) throw std::bad_alloc();
    in_left -= in_now - s.avail_in;
    written += out_now - s.avail_out;
  }
  out.resize(written);
}
#endif

}  // namespace imflow::detail
