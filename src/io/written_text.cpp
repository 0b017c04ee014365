// A thread's notes of the output files it last wrote from one buffer, and the process's notes of
// large outputs' CRCs (written_text.hpp).
#include "imflow/io/written_text.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>

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

// The file a CRC note is about: its inode, size and modification time.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};
std::optional<FileIdentity> identity_of(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{st.st_dev, st.st_ino, st.st_size, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

// Notes the manifest has not taken yet (an item that failed after writing leaves its own): the
// oldest go beyond this many.
constexpr size_t kMaxCrcNotes = 64;
struct CrcNote {
  WrittenCrc crc;
  FileIdentity identity;
  uint64_t order = 0;
};
std::mutex crc_notes_lock;
std::map<std::string, CrcNote> crc_notes;
uint64_t crc_notes_made = 0;
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

void note_written_crc(const std::filesystem::path& path, WrittenCrc crc) {
  const std::optional<FileIdentity> identity = identity_of(path);
  if (!identity || static_cast<uint64_t>(identity->size) != crc.size) return;
  std::lock_guard lock(crc_notes_lock);
  crc_notes[path.native()] = {crc, *identity, ++crc_notes_made};
  if (crc_notes.size() > kMaxCrcNotes) {
    crc_notes.erase(std::min_element(crc_notes.begin(), crc_notes.end(), [](const auto& a, const auto& b) {
      return a.second.order < b.second.order;
    }));
  }
}

std::optional<WrittenCrc> take_written_crc(const std::filesystem::path& path) {
  CrcNote note;
  {
    std::lock_guard lock(crc_notes_lock);
    const auto found = crc_notes.find(path.native());
    if (found == crc_notes.end()) return std::nullopt;
    note = found->second;
    crc_notes.erase(found);
  }
  if (identity_of(path) != note.identity) return std::nullopt;
  return note.crc;
}

}  // namespace imflow
