// Writing header cards (FitsCard) into the current HDU of a FITS file being written.
#pragma once
#include <fitsio.h>

#include <vector>

#include "imflow/io/fits.hpp"

namespace imflow::detail {

// Each card as a string or number keyword (updated if present), or written as its record;
// returns CFITSIO's status (0: all written).
int write_fits_cards(fitsfile* file, const std::vector<FitsCard>& cards);

}  // namespace imflow::detail
