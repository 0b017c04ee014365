// The bytes of the output files this thread just wrote whole from one buffer (an item's CSV and
// FITS catalogs, its PNG image), so that finishing the item (the manifest's CRCs, the merged
// catalog.csv's rows) reads that memory instead of the files it just wrote; and the CRCs of large
// outputs computed while they were written on several threads (a mosaic's catalog CSV).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

namespace imflow {

// `path` now holds exactly `text`, which stays unchanged until this thread forgets the note. A
// thread keeps the last few notes (kWrittenTextNotes; a newer note for the same path replaces one).
inline constexpr int kWrittenTextNotes = 4;
void note_written_text(const std::filesystem::path& path, std::string_view text);
// Drop every note (the item is finished), or those whose text starts at `buffer` (about to change).
void forget_written_text();
void forget_written_text(const void* buffer);
// The text this thread noted for `path` (compared as written), or nullptr.
const std::string_view* written_text(const std::filesystem::path& path);

// A file's size and CRC-32 (zlib's), as its writer computed them.
struct WrittenCrc {
  uint64_t size = 0;
  uint32_t crc32 = 0;
};
// `path`, complete under its final name, holds bytes of this size and CRC. The note, seen by every
// thread, records the file's inode and mtime (a stat now); nothing is noted if the stat fails.
void note_written_crc(const std::filesystem::path& path, WrittenCrc crc);
// The note for `path`, removed, if the file is still the one noted (same inode, size and mtime).
std::optional<WrittenCrc> take_written_crc(const std::filesystem::path& path);

}  // namespace imflow
