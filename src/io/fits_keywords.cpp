// Header keywords of an image HDU read on demand: a number (e.g. a detector's GAIN) or the whole
// header (the FITS_LDAC catalog's copy of the image header).
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

std::vector<std::string> read_fits_header_records(const fs::path& path, int hdu) {
  detail::FitsFile file;
  int status = 0, type = 0, keys = 0;
  char* header = nullptr;
  detail::clear_fits_errors();
  if (detail::open_fits_readonly(file, path, &status) == 0 && fits_movabs_hdu(file.get(), hdu + 1, &type, &status) == 0) {
    // A tile-compressed image's header as the image's (ZNAXISn as NAXISn, ...).
    int compressed = fits_is_compressed_image(file.get(), &status);
    if (compressed) fits_convert_hdr2str(file.get(), 1, nullptr, 0, &header, &keys, &status);
    else fits_hdr2str(file.get(), 1, nullptr, 0, &header, &keys, &status);
  }
  if (status != 0 || header == nullptr) {
    int ignored = 0;
    if (header != nullptr) fits_free_memory(header, &ignored);
    throw InputError(detail::fits_error_text(path, "cannot read the header of HDU " + std::to_string(hdu), status));
  }
  std::vector<std::string> records;
  records.reserve(static_cast<size_t>(keys));
  for (int k = 0; k < keys; ++k) records.emplace_back(header + static_cast<size_t>(k) * 80, 80);
  fits_free_memory(header, &status);
  if (!records.empty() && records.back().starts_with("END ")) records.pop_back();
  return records;
}

}  // namespace imflow
