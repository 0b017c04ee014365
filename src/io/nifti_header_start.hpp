// The first fields of a NIfTI-1, NIfTI-2 or Analyze 7.5 header, checked before nifticlib reads the
// file: nifticlib prints bare lines ("** ERROR: nifti_convert_n1hdr2nim: bad dim[1]") to stderr
// for headers it rejects, which name no file when several are read at once.
#pragma once
#include <filesystem>

namespace imflow::detail {

// Throws InputError naming the file when it cannot be read (a corrupt gzip stream: zlib's reason),
// when sizeof_hdr is neither 348 (NIfTI-1, Analyze 7.5) nor 540 (NIfTI-2) in either byte order,
// when dim[0] is not 1..7 or one of dim[1..dim[0]] is below 1, when the datatype is no NIfTI
// code, or when a single file (not a .hdr of a pair) lacks NIfTI's magic.
void check_nifti_header_start(const std::filesystem::path& path);

}  // namespace imflow::detail
