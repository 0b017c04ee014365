// Creating and completing FITS outputs: under a temporary name (AtomicOutput), or built in memory
// and written whole (write_fits_file: the catalogs).
#pragma once
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "fits_status.hpp"
#include "imflow/io/atomic_file.hpp"

namespace imflow::detail {

// A new FITS file at output.temp_path() (the name taken as it is, no CFITSIO extended syntax);
// throws OutputError naming the final path.
FitsFile create_output_fits(const AtomicOutput& output);
// Close the file (flushing it) and rename it to its final name; throws OutputError.
void finish_output_fits(FitsFile& file, AtomicOutput& output);

// Memory CFITSIO builds a file's headers in, and the file's bytes, kept from file to file (a
// fresh buffer of ~1 MB costs its page faults every image).
struct MemoryFitsBuffer {
  void* data = nullptr;
  size_t size = 0;                 // allocated bytes (CFITSIO grows it with realloc)
  std::vector<unsigned char> file;  // the file written: CFITSIO's bytes, then the last table's rows
  MemoryFitsBuffer() = default;
  MemoryFitsBuffer(const MemoryFitsBuffer&) = delete;
  MemoryFitsBuffer& operator=(const MemoryFitsBuffer&) = delete;
  ~MemoryFitsBuffer();
};

// The rows of a file's last HDU, a binary table that CFITSIO made with NAXIS2 = 0: rows [first,
// end) encoded by `encode` ((end - first) x row_bytes bytes) straight into the bytes written,
// NAXIS2 set to `count`.
struct LastTableRows {
  size_t count = 0, row_bytes = 0;
  std::function<void(size_t first, size_t end, unsigned char* out)> encode;
};

// A FITS file whose HDUs `write_hdus` makes, published only complete. CFITSIO builds its HDUs in
// memory (write_hdus is given a LastTableRows to fill, or not, for its last table). With a
// `buffer` (a table that fits it) the file is built there, written in one piece (AtomicFileWriter)
// and noted as the file's bytes (written_text.hpp: the item's manifest CRC then reads memory),
// which stay in `buffer` until its next file; without, the last table's rows are encoded in blocks
// on all threads and copied into the file at their offsets, their CRCs joined into the file's
// (note_written_crc). Throws OutputError.
void write_fits_file(const std::filesystem::path& path, MemoryFitsBuffer* buffer,
                     const std::function<void(fitsfile*, LastTableRows*)>& write_hdus);

// Throws OutputError: `path`, what failed and CFITSIO's status and message (fits_error_text).
[[noreturn]] void fail_fits_output(const std::filesystem::path& path, const std::string& what, int status);

}  // namespace imflow::detail
