// The bytes of the output files this thread just wrote whole from one buffer (an item's CSV and
// FITS catalogs, its PNG image), so that finishing the item (the manifest's CRCs, the merged
// catalog.csv's rows) reads that memory instead of the files it just wrote.
#pragma once
#include <filesystem>
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

}  // namespace imflow
