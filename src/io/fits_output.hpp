// Creating and completing FITS outputs: under a temporary name (AtomicOutput), or built in memory
// and written whole (MemoryFitsOutput: the catalogs).
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>

#include "fits_status.hpp"
#include "imflow/io/atomic_file.hpp"

namespace imflow::detail {

// A new FITS file at output.temp_path() (the name taken as it is, no CFITSIO extended syntax);
// throws OutputError naming the final path.
FitsFile create_output_fits(const AtomicOutput& output);
// Close the file (flushing it) and rename it to its final name; throws OutputError.
void finish_output_fits(FitsFile& file, AtomicOutput& output);

// Memory CFITSIO builds a file in, kept from file to file (a fresh one of ~1 MB costs its page
// faults every image).
struct MemoryFitsBuffer {
  void* data = nullptr;
  size_t size = 0;  // allocated bytes (CFITSIO grows it with realloc)
  MemoryFitsBuffer() = default;
  MemoryFitsBuffer(const MemoryFitsBuffer&) = delete;
  MemoryFitsBuffer& operator=(const MemoryFitsBuffer&) = delete;
  ~MemoryFitsBuffer();
};

// A FITS file that CFITSIO builds in `buffer`, then written to `path` in one piece by finish()
// (AtomicFileWriter: published only complete) and noted as the file's bytes (written_text.hpp),
// so that the item's manifest CRC reads memory, not the file. The bytes stay in `buffer` until
// the next MemoryFitsOutput on it.
class MemoryFitsOutput {
 public:
  MemoryFitsOutput(std::filesystem::path path, MemoryFitsBuffer& buffer);  // throws OutputError
  fitsfile* get() const { return file_.get(); }
  const std::filesystem::path& path() const { return path_; }
  void finish();  // throws OutputError

 private:
  std::filesystem::path path_;
  MemoryFitsBuffer& buffer_;
  FitsFile file_;
};

// Throws OutputError: `path`, what failed and CFITSIO's status and message (fits_error_text).
[[noreturn]] void fail_fits_output(const std::filesystem::path& path, const std::string& what, int status);

}  // namespace imflow::detail
