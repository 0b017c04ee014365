// The text of the output file this thread last wrote whole from one buffer (an item's CSV
// catalog), so that finishing the item (the manifest's CRC, the merged catalog.csv's rows) reads
// that memory instead of the file it just wrote.
#pragma once
#include <filesystem>
#include <string_view>

namespace imflow {

// `path` now holds exactly `text`, which stays unchanged until this thread's next
// forget_written_text() or note_written_text().
void note_written_text(const std::filesystem::path& path, std::string_view text);
// Drop the note (its buffer is about to change).
void forget_written_text();
// The text this thread noted for `path` (compared as written), or nullptr.
const std::string_view* written_text(const std::filesystem::path& path);

}  // namespace imflow
