// `imflow bench --ceiling`, its output side: the files the bench's last run wrote, written again
// as new files with the same sizes, as the engine publishes its outputs (an unnamed file linked
// into place; files above 8 MiB copied in 8 MiB blocks on all threads), with no formatting: the
// most the output directory's filesystem allows these outputs on this machine.
#pragma once
#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace imflow::bench {

// Every regular file under `written` (recursively) written again under `scratch` (a directory of
// the same filesystem, emptied before each pass; the last pass's files are left for the caller to
// remove), `repeats` times after one untimed pass, on `threads` threads; `items` is how many items
// the run that wrote them processed.
// Returns {what, threads, files, items, megabytes, seconds {median, min, max},
// images_per_second {median, min, max}, megabytes_per_second (median)}, or {skipped: why} when
// `written` holds no file. Throws OutputError when a file cannot be written.
nlohmann::json measure_output_ceiling(const std::filesystem::path& written, const std::filesystem::path& scratch,
                                      int64_t items, int threads, int repeats);

}  // namespace imflow::bench
