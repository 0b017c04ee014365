// Checks made on an input file before any reader touches it: a regular file (a FIFO would block
// a reader), at most max_file_bytes, and for gzip data at most max_file_bytes once inflated.
#pragma once
#include <cstdint>
#include <filesystem>

namespace imflow {

// Throws InputError naming the file. `inflate_check`: for gzip files whose inflated size could
// exceed the limit (deflate expands at most ~1032:1), count the inflated bytes (stops at the limit).
void check_input_file(const std::filesystem::path& path, int64_t max_file_bytes, bool inflate_check);

// A relative path that stays below the directory it is relative to: not empty, not absolute,
// no '..' or '.' components.
bool is_contained_relative(const std::filesystem::path& relative);

}  // namespace imflow
