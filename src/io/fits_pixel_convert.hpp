// Big-endian FITS pixels of any BITPIX to float32, bit for bit as CFITSIO's TFLOAT reads do it
// (getcole.c: fffi1r4, fffi2r4, fffi4r4, fffi8r4, fffr4r4, fffr8r4 with nullcheck 0 or 1).
#pragma once
#include <cstdint>

namespace imflow::detail {

// How the stored values of one image HDU become floats: CFITSIO's own BSCALE, BZERO and BLANK.
struct PixelConversion {
  int bitpix = -32;    // 8, 16, 32, 64, -32 or -64
  double scale = 1.0;  // BSCALE as CFITSIO parsed it
  double zero = 0.0;   // BZERO as CFITSIO parsed it
  // Stored value that reads as NaN (integer BITPIX only; CFITSIO's rules for when BLANK applies
  // are in null_check_applies()).
  bool check_blank = false;
  int64_t blank = 0;
};

// Whether CFITSIO checks BLANK for an integer image when the caller asks for a null value:
// BLANK present (CFITSIO's NULL_UNDEFINED marks it absent) and representable in the type.
bool null_check_applies(int bitpix, int64_t blank, int64_t blank_undefined);

// Convert `count` stored pixels at `raw` (big-endian, |bitpix|/8 bytes each) into `out`. Integer
// pixels equal to the BLANK become NaN; float pixels are not checked (NaN stays NaN), as imflow's
// reads through CFITSIO do (null value NaN for integer images, none for float images). For 4-byte
// pixels `raw` may be `out` itself (converted in place).
void convert_big_endian_pixels(const unsigned char* raw, int64_t count, const PixelConversion& conversion, float* out);

}  // namespace imflow::detail
