// Flag-map values per source (SExtractor's IMAFLAGS_ISO with FLAG_TYPE OR, and NIMAFLAGS_ISO),
// CPU kernel.
#pragma once
#include <cstdint>

#include "imflow/source.hpp"

namespace imflow::kernels {

// For every source of `catalog` (its id the label of its pixels in `labels`, 0 elsewhere; both
// maps hold `pixels` values): imaflags_iso = the OR of `flags` over its pixels, nimaflags_iso =
// how many of them have a non-zero flag. Labels outside 1..catalog.size() are ignored.
void or_image_flags(const int32_t* labels, const int32_t* flags, int64_t pixels, Catalog& catalog);

}  // namespace imflow::kernels
