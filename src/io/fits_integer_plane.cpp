// A FITS image plane read as exact integers (flag maps: SExtractor's FLAG_IMAGE), where the
// float32 read of images would round values of 2^24 and more.
#include <fitsio.h>

#include "fits_status.hpp"
#include "imflow/errors.hpp"
#include "imflow/io/fits.hpp"

namespace imflow {

std::vector<int64_t> read_fits_integer_plane(const std::filesystem::path& path, int hdu, int64_t plane, int64_t pixels) {
  detail::FitsFile file;
  int status = 0, type = 0, bitpix = 0;
  const detail::FitsMessages messages;
  if (detail::open_fits_readonly(file, path, &status) != 0) throw InputError(detail::fits_not_opened_text(path, status));
  if (fits_movabs_hdu(file.get(), hdu + 1, &type, &status) != 0 || fits_get_img_equivtype(file.get(), &bitpix, &status) != 0) {
    throw InputError(detail::fits_error_text(path, "cannot read HDU " + std::to_string(hdu), status));
  }
  if (bitpix == FLOAT_IMG || bitpix == DOUBLE_IMG) {
    throw InputError(path.string() + ": HDU " + std::to_string(hdu) + " holds floating-point pixels (BITPIX " +
                     std::to_string(bitpix) + ", or a BSCALE that is not whole): a flag map holds integers");
  }
  std::vector<int64_t> values(static_cast<size_t>(pixels));
  LONGLONG blank = 0;  // BLANK pixels: no flag
  int any_blank = 0;
  if (pixels > 0 && fits_read_img(file.get(), TLONGLONG, plane * pixels + 1, pixels, &blank, values.data(), &any_blank,
                                  &status) != 0) {
    throw InputError(detail::fits_error_text(path, "cannot read the integer pixels of HDU " + std::to_string(hdu), status));
  }
  return values;
}

}  // namespace imflow
