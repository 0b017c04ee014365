// Where an uncompressed image HDU's pixels lie and how CFITSIO scales them, asked of CFITSIO
// itself: ffgcprll is the routine every CFITSIO pixel read starts with (getcole.c, ffgcle), so the
// data offset, BSCALE, BZERO and BLANK are exactly those a CFITSIO read would use.
#include <fitsio.h>
extern "C" {
#include <fitsio2.h>  // ffgcprll, NULL_UNDEFINED (CFITSIO's internal header, installed by libcfitsio-dev)
}

#include <cmath>
#include <cstring>

#include "fits_direct_read.hpp"
#include "fits_status.hpp"

namespace imflow::detail {

namespace {
// The CFITSIO column type of each BITPIX (ffpinit).
int type_code_of(int bitpix) {
  switch (bitpix) {
    case BYTE_IMG: return TBYTE;
    case SHORT_IMG: return TSHORT;
    case LONG_IMG: return TLONG;
    case LONGLONG_IMG: return TLONGLONG;
    case FLOAT_IMG: return TFLOAT;
    case DOUBLE_IMG: return TDOUBLE;
    default: return 0;
  }
}
}  // namespace

std::optional<DirectImageLayout> direct_image_layout(fitsfile* file, const FitsImageInfo& info) {
  int status = 0;
  if (fits_is_compressed_image(file, &status) != 0 || status != 0) return std::nullopt;
  char url_type[FLEN_FILENAME] = {0};
  // Only files CFITSIO reads as they are on disk ("compress://" means it decompressed them).
  if (fits_url_type(file, url_type, &status) != 0 || std::strcmp(url_type, "file://") != 0) return std::nullopt;
  if (info.naxes.size() < 2) return std::nullopt;

  double scale = 1, zero = 0;
  char tform[FLEN_VALUE] = {0}, snull[FLEN_VALUE] = {0};
  long twidth = 0, incre = 0;
  int tcode = 0, maxelem = 0, hdutype = 0;
  LONGLONG startpos = 0, elemnum = 0, repeat = 0, rowlen = 0, tnull = 0;
  // Column 2 of an image HDU is its pixel array (CFITSIO treats an image as a one-row table).
  if (ffgcprll(file, 2, 1, 1, 1, 0, &scale, &zero, tform, &twidth, &tcode, &maxelem, &startpos, &elemnum, &incre,
               &repeat, &rowlen, &hdutype, &tnull, snull, &status) != 0) {
    return std::nullopt;
  }
  const int bytes_per_pixel = std::abs(info.bitpix) / 8;
  int64_t pixels = 1;
  for (int64_t n : info.naxes) pixels *= n;
  if (hdutype != IMAGE_HDU || tcode != type_code_of(info.bitpix) || twidth != bytes_per_pixel ||
      incre != bytes_per_pixel || elemnum != 0 || repeat != pixels || startpos < 0) {
    return std::nullopt;
  }
  if (!std::isfinite(scale) || !std::isfinite(zero) || scale == 0) return std::nullopt;

  LONGLONG header_start = 0, data_start = 0, data_end = 0;
  if (fits_get_hduaddrll(file, &header_start, &data_start, &data_end, &status) != 0) return std::nullopt;
  DirectImageLayout layout;
  layout.header_offset = header_start;
  layout.data_offset = startpos;
  layout.width = info.naxes[0];
  layout.height = info.naxes[1];
  layout.bytes_per_pixel = bytes_per_pixel;
  layout.conversion.bitpix = info.bitpix;
  layout.conversion.scale = scale;
  layout.conversion.zero = zero;
  layout.conversion.check_blank = null_check_applies(info.bitpix, tnull, NULL_UNDEFINED);
  layout.conversion.blank = tnull;
  return layout;
}

}  // namespace imflow::detail
