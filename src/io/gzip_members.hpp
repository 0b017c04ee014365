// Whether a gzip file holds more than one member (RFC 1952 allows a series: bgzip, `cat a.gz
// b.gz` and parallel compressors write them), which CFITSIO's decompression stops short of.
#pragma once
#include <filesystem>

namespace imflow::detail {

// True when another gzip member follows the first one's end (its stream inflated to find it);
// false for a single member, a file that is not gzip, or one that cannot be read.
bool has_several_gzip_members(const std::filesystem::path& path);

}  // namespace imflow::detail
