// A thread's notes of the output files it last wrote from one buffer (written_text.hpp).
#include "imflow/io/written_text.hpp"

#include <algorithm>
#include <array>
#include <filesystem>

namespace imflow {

namespace {
struct WrittenText {
  std::filesystem::path path;
  std::string_view text;
};
struct Notes {
  std::array<WrittenText, kWrittenTextNotes> notes;
  int count = 0;  // notes[0, count), oldest first

  void erase(int i) {
    std::move(notes.begin() + i + 1, notes.begin() + count, notes.begin() + i);
    --count;
  }
};
thread_local Notes written;
}  // namespace

void note_written_text(const std::filesystem::path& path, std::string_view text) {
  for (int i = 0; i < written.count; ++i) {
    if (written.notes[i].path.native() == path.native()) {
      written.erase(i);
      break;
    }
  }
  if (written.count == kWrittenTextNotes) written.erase(0);
  written.notes[written.count++] = {path, text};
}

void forget_written_text() { written.count = 0; }

void forget_written_text(const void* buffer) {
  if (buffer == nullptr) return;
  for (int i = written.count - 1; i >= 0; --i) {
    if (static_cast<const void*>(written.notes[i].text.data()) == buffer) written.erase(i);
  }
}

const std::string_view* written_text(const std::filesystem::path& path) {
  for (int i = written.count - 1; i >= 0; --i) {
    if (written.notes[i].path.native() == path.native()) return &written.notes[i].text;
  }
  return nullptr;
}

}  // namespace imflow
