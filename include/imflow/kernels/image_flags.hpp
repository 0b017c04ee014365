// Flag-map values per source (SExtractor's IMAFLAGS_ISO with its FLAG_TYPE, and NIMAFLAGS_ISO),
// CPU kernel.
#pragma once
#include <cstdint>

#include "imflow/source.hpp"

namespace imflow::kernels {

// SExtractor's FLAG_TYPE: how the non-zero flag values of a source's pixels make its IMAFLAGS_ISO.
enum class FlagType {
  bit_or,    // OR: their bitwise OR; NIMAFLAGS_ISO = how many pixels have a non-zero flag
  bit_and,   // AND: their bitwise AND (SExtractor 2.25 starts it from 0 and so always writes 0)
  minimum,   // MIN: the smallest (as unsigned 32-bit flags); NIMAFLAGS_ISO = how many pixels have it
  maximum,   // MAX: the largest (as unsigned 32-bit flags); NIMAFLAGS_ISO = how many pixels have it
  most,      // MOST: the most frequent (a tie: the value met first in raster order); its count
};

// For every source of `catalog` (its id the label of its pixels in `labels`, 0 elsewhere; both
// maps hold `pixels` values): imaflags_iso and nimaflags_iso from the non-zero `flags` of its
// pixels as `type` says; 0 and 0 where none is. Labels outside 1..catalog.size() are ignored.
void image_flags(const int32_t* labels, const int32_t* flags, int64_t pixels, FlagType type, Catalog& catalog);

}  // namespace imflow::kernels
