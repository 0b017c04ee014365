// Direct reads of uncompressed FITS image data: a region is `height` row segments (one segment
// when it spans whole rows), each pread in chunks from an own file descriptor and converted while
// the chunk is still in cache. 4-byte pixels are read straight into the output and converted in
// place; 1-, 2- and 8-byte pixels go through a small scratch buffer.

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "fits_direct_read.hpp"
#include "imflow/errors.hpp"
#include "read_only_file.hpp"

namespace imflow::detail {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kChunkBytes = int64_t{256} << 10;  // stored bytes per pread: fits in L2

// Our descriptor must see the HDU where CFITSIO saw it: its header starts with SIMPLE or XTENSION.
void check_header_card(const ReadOnlyFile& file, const DirectImageLayout& layout, const fs::path& path,
                       const std::string& what) {
  unsigned char card[8];
  pread_exactly(file, card, sizeof card, layout.header_offset, path, what);
  if (std::memcmp(card, "SIMPLE  ", 8) != 0 && std::memcmp(card, "XTENSION", 8) != 0) {
    throw InputError(path.string() + ": " + what + ": no FITS header at offset " + std::to_string(layout.header_offset) +
                     " (the file changed while it was being read?)");
  }
}

}  // namespace

void read_direct(const fs::path& path, const DirectImageLayout& layout, int64_t plane, const TileRect& region,
                 float* out, const std::string& what, bool convert) {
  ReadOnlyFile file(path);
  check_header_card(file, layout, path, what);
  const int64_t bpp = layout.bytes_per_pixel;
  // 4-byte pixels convert in place in `out`; the others need room of their own.
  const bool in_place = bpp == static_cast<int64_t>(sizeof(float));
  if (!convert && !in_place) throw std::logic_error("read_direct: only 4-byte pixels can stay unconverted");
  const int64_t chunk_pixels = std::max<int64_t>(1, kChunkBytes / bpp);
  std::unique_ptr<unsigned char[]> scratch;
  if (!in_place) scratch.reset(new unsigned char[static_cast<size_t>(std::min(chunk_pixels, region.size()) * bpp)]);

  // Whole rows are contiguous in the file: one segment; otherwise one segment per row.
  const bool whole_rows = region.x == 0 && region.width == layout.width;
  const int64_t segments = whole_rows ? 1 : region.height;
  const int64_t segment_pixels = whole_rows ? region.size() : region.width;
  for (int64_t s = 0; s < segments; ++s) {
    const int64_t first_pixel = (plane * layout.height + region.y + s) * layout.width + region.x;
    const int64_t segment_offset = layout.data_offset + first_pixel * bpp;
    float* segment_out = out + s * segment_pixels;
    for (int64_t done = 0; done < segment_pixels; done += chunk_pixels) {
      const int64_t count = std::min(chunk_pixels, segment_pixels - done);
      unsigned char* raw = in_place ? reinterpret_cast<unsigned char*>(segment_out + done) : scratch.get();
      pread_exactly(file, raw, count * bpp, segment_offset + done * bpp, path, what);
      if (convert) convert_big_endian_pixels(raw, count, layout.conversion, segment_out + done);
    }
  }
}

}  // namespace imflow::detail
