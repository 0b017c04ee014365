// FITS writing through CFITSIO: float images and int32 label maps, written under a temporary name
// and renamed when complete, and catalog binary tables, built in memory and written whole (a large
// table's rows in blocks on all threads).
#include <fitsio.h>
#include <malloc.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "copied_blocks.hpp"
#include "fits_cards.hpp"
#include "fits_output.hpp"
#include "fits_status.hpp"
#include "fits_table.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/catalog.hpp"
#include "imflow/io/concurrent_file_writer.hpp"
#include "imflow/io/atomic_file.hpp"
#include "imflow/io/fits.hpp"
#include "imflow/io/written_text.hpp"

namespace imflow {

namespace fs = std::filesystem;
using detail::fits_error_text;
using detail::FitsFile;

void detail::fail_fits_output(const fs::path& path, const std::string& what, int status) {
  throw OutputError(fits_error_text(path, what, status));
}

FitsFile detail::create_output_fits(const AtomicOutput& output) {
  FitsFile file;
  int status = 0;
  // The diskfile form takes the name as it is: fits_create_file would read "[", "(" or "+" in an
  // output named after an input such as "m31[r].fits" as CFITSIO's extended filename syntax.
  if (fits_create_diskfile(file.out(), output.temp_path().c_str(), &status) != 0) detail::fail_fits_output(output.final_path(), "cannot create", status);
  return file;
}

void detail::finish_output_fits(FitsFile& file, AtomicOutput& output) {
  const int status = file.close_checked();
  if (status != 0) detail::fail_fits_output(output.final_path(), "cannot complete the file", status);
  output.commit();
}

detail::MemoryFitsBuffer::~MemoryFitsBuffer() { std::free(data); }

namespace {
// CFITSIO's realloc for a memory file: grows as realloc does but never shrinks, so that the
// truncation at each close does not give the pages back for the next file to fault in again.
void* realloc_never_shrinking(void* memory, size_t bytes) {
  if (memory != nullptr && bytes <= malloc_usable_size(memory)) return memory;
  return std::realloc(memory, bytes);
}

// Sets the value of the NAXIS2 card among the whole cards of `header` to `rows`, as CFITSIO writes
// an integer (right-justified in columns 11-30); false without such a card.
bool set_naxis2(char* header, size_t bytes, size_t rows) {
  for (size_t at = 0; at + 80 <= bytes; at += 80) {
    char* card = header + at;
    if (std::memcmp(card, "NAXIS2  = ", 10) != 0) continue;
    char digits[24];
    const size_t length = static_cast<size_t>(std::to_chars(digits, digits + sizeof digits, rows).ptr - digits);
    if (length > 20) return false;
    std::memset(card + 10, ' ', 20 - length);
    std::memcpy(card + 30 - length, digits, length);
    return true;
  }
  return false;
}

// A FITS file that CFITSIO builds in `buffer`, written to `path` whole by finish(), with the rows
// of its last table (if given) encoded after CFITSIO's bytes.
class MemoryFitsOutput {
 public:
  MemoryFitsOutput(fs::path path, detail::MemoryFitsBuffer& buffer) : path_(std::move(path)), buffer_(buffer) {
    forget_written_text(buffer_.file.data());  // the file's bytes are about to change
    // CFITSIO takes the memory's size as a file already there: given 0, it starts an empty file
    // and asks realloc for room, which the allocation kept from the last file gives in place.
    buffer_.size = 0;
    constexpr size_t kGrowth = size_t{1} << 20;
    int status = 0;
    if (fits_create_memfile(file_.out(), &buffer_.data, &buffer_.size, kGrowth, realloc_never_shrinking, &status) != 0) {
      detail::fail_fits_output(path_, "cannot create in memory", status);
    }
  }
  fitsfile* get() const { return file_.get(); }

  // Closes CFITSIO's file, NAXIS2 of the last table set to rows.count when its rows are given;
  // returns the size of CFITSIO's bytes in buffer_.data (its last HDU's data padded to 2880).
  size_t close(const detail::LastTableRows& rows) {
    // CFITSIO's file ends where an HDU after the last would start: its data padded to 2880
    // bytes, the padding written by the close.
    LONGLONG head = 0, data = 0, end = 0;
    int status = 0;
    if (fits_get_hduaddrll(file_.get(), &head, &data, &end, &status) != 0) {
      detail::fail_fits_output(path_, "cannot complete the file", status);
    }
    status = file_.close_checked();
    if (status != 0) detail::fail_fits_output(path_, "cannot complete the file", status);
    if (end <= 0 || static_cast<size_t>(end) > buffer_.size || (rows.encode && data != end)) {
      detail::fail_fits_output(path_, "cannot complete the file", FILE_NOT_CREATED);
    }
    if (rows.encode && !set_naxis2(static_cast<char*>(buffer_.data) + head, static_cast<size_t>(data - head), rows.count)) {
      detail::fail_fits_output(path_, "cannot complete the file", FILE_NOT_CREATED);
    }
    return static_cast<size_t>(end);
  }

  // The file whole: CFITSIO's bytes, then the last table's rows and their padding.
  void finish(const detail::LastTableRows& rows) {
    const size_t cfitsio_bytes = close(rows);
    const size_t row_bytes = rows.encode ? rows.count * rows.row_bytes : 0;
    const size_t total = cfitsio_bytes + (row_bytes + 2879) / 2880 * 2880;
    std::vector<unsigned char>& file = buffer_.file;
    if (file.size() < total) file.resize(total);
    std::memcpy(file.data(), buffer_.data, cfitsio_bytes);
    if (rows.encode) {
      rows.encode(0, rows.count, file.data() + cfitsio_bytes);
      std::memset(file.data() + cfitsio_bytes + row_bytes, 0, total - cfitsio_bytes - row_bytes);
    }
    const std::string_view bytes(reinterpret_cast<const char*>(file.data()), total);
    AtomicFileWriter output(path_);
    output.write(bytes);
    output.commit();
    note_written_text(path_, bytes);
  }

  // A large last table: CFITSIO's bytes written, then its rows encoded in blocks on all threads
  // and copied into the file at their offsets, then the padding; each piece's CRC joins the
  // file's in order (noted for the item's manifest).
  void finish_in_blocks(const detail::LastTableRows& rows) {
    const std::string_view headers(static_cast<const char*>(buffer_.data), close(rows));
    AtomicFileWriter output(path_);
    output.write(headers);
    ConcurrentFileWriter file(output.descriptor());
    const size_t blocks = rows.encode ? (rows.count + kCatalogBlockRows - 1) / kCatalogBlockRows : 0;
    detail::CopiedBytes copied = detail::copy_blocks_in_order<std::vector<unsigned char>>(
        file, path_, blocks, {headers.size(), crc32_update(0, headers)}, [&](size_t b) {
          const size_t first = b * kCatalogBlockRows, last = std::min(rows.count, first + kCatalogBlockRows);
          std::vector<unsigned char> bytes((last - first) * rows.row_bytes);
          rows.encode(first, last, bytes.data());
          return bytes;
        });
    const std::string padding((2880 - (copied.end - headers.size()) % 2880) % 2880, '\0');
    const std::string_view pad[] = {padding};
    if (const int failure = file.write_at(copied.end, pad); failure != 0) throw write_failed(path_, failure);
    output.commit();
    note_written_crc(path_, {copied.end + padding.size(), crc32_update(copied.crc32, padding)});
  }

 private:
  fs::path path_;
  detail::MemoryFitsBuffer& buffer_;
  FitsFile file_;
};
}  // namespace

void detail::write_fits_file(const fs::path& path, MemoryFitsBuffer* buffer,
                             const std::function<void(fitsfile*, LastTableRows*)>& write_hdus) {
  MemoryFitsBuffer headers;  // CFITSIO's bytes of a file without a buffer: its headers and small tables
  MemoryFitsOutput output(path, buffer != nullptr ? *buffer : headers);
  LastTableRows rows;
  write_hdus(output.get(), &rows);
  if (buffer != nullptr) output.finish(rows);
  else output.finish_in_blocks(rows);
}

namespace {
void write_cards(fitsfile* file, const fs::path& path, const std::vector<FitsCard>& cards) {
  if (const int status = detail::write_fits_cards(file, cards); status != 0) detail::fail_fits_output(path, "cannot write header keywords", status);
}

template <typename T>
void write_image(const fs::path& path, View2D<const T> image, int bitpix, int datatype,
                 const std::vector<FitsCard>& cards) {
  AtomicOutput output(path);
  FitsFile file = detail::create_output_fits(output);
  int status = 0;
  long long naxes[2] = {image.width, image.height};
  if (fits_create_imgll(file.get(), bitpix, 2, naxes, &status) != 0) detail::fail_fits_output(path, "cannot create the image", status);
  write_cards(file.get(), path, cards);
  long long first[2] = {1, 1};
  if (fits_write_pixll(file.get(), datatype, first, image.size(), const_cast<T*>(image.data), &status) != 0) {
    detail::fail_fits_output(path, "cannot write pixels", status);
  }
  detail::finish_output_fits(file, output);
}
}  // namespace

void write_fits_image(const fs::path& path, ConstImageView image, const std::vector<FitsCard>& cards) {
  write_image<float>(path, image, FLOAT_IMG, TFLOAT, cards);
}

void write_fits_labels(const fs::path& path, View2D<const int32_t> labels, const std::vector<FitsCard>& cards) {
  write_image<int32_t>(path, labels, LONG_IMG, TINT, cards);
}

void write_catalog_fits(const fs::path& path, const Catalog& catalog, const std::vector<FitsCard>& cards,
                        const PhotometryTable* photometry) {
  const std::vector<detail::OutputColumn> columns = detail::catalog_output_columns(photometry);
  thread_local detail::MemoryFitsBuffer buffer;
  detail::write_fits_file(path, detail::table_fits_in_memory(catalog.size(), columns) ? &buffer : nullptr,
                          [&](fitsfile* file, detail::LastTableRows* rows) {
                            detail::write_catalog_table(file, path, "CATALOG", catalog, photometry, columns, cards, rows);
                          });
}

}  // namespace imflow
