// Numeric header keywords of an image HDU (e.g. a detector's GAIN), read on demand.
#include <fitsio.h>

#include "fits_status.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"

namespace imflow {

namespace fs = std::filesystem;

std::optional<double> read_fits_number_keyword(const fs::path& path, int hdu, const std::string& keyword) {
  detail::FitsFile file;
  int status = 0, type = 0;
  detail::clear_fits_errors();
  if (detail::open_fits_readonly(file, path, &status) != 0) {
    throw InputError(detail::fits_error_text(path, "not a readable FITS file", status));
  }
  // The HDU's own card first, then the primary header's (multi-extension files often keep
  // detector keywords there, and astropy users expect them to apply to every extension).
  for (const int at : {hdu, 0}) {
    if (fits_movabs_hdu(file.get(), at + 1, &type, &status) != 0) {
      throw InputError(detail::fits_error_text(path, "cannot move to HDU " + std::to_string(at), status));
    }
    double value = 0.0;
    int key_status = 0;
    if (fits_read_key(file.get(), TDOUBLE, keyword.c_str(), &value, nullptr, &key_status) == 0) return value;
    // KEY_NO_EXIST: not in this header; VALUE_UNDEFINED or BAD_C2D: present but not a number.
    if (key_status != KEY_NO_EXIST) {
      throw InputError(path.string() + ": HDU " + std::to_string(at) + ": keyword " + keyword + " is not a number");
    }
    if (at == 0) break;
  }
  return std::nullopt;
}

}  // namespace imflow
