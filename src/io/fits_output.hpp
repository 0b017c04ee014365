// Creating and completing a FITS file that is written under a temporary name (AtomicOutput).
#pragma once
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

// Throws OutputError: `path`, what failed and CFITSIO's status and message (fits_error_text).
[[noreturn]] void fail_fits_output(const std::filesystem::path& path, const std::string& what, int status);

}  // namespace imflow::detail
