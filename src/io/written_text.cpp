// A thread's note of the last output file it wrote from one buffer (written_text.hpp).
#include "imflow/io/written_text.hpp"

#include <string>

namespace imflow {

namespace {
struct WrittenText {
  std::filesystem::path path;
  std::string_view text;
  bool noted = false;
};
thread_local WrittenText last_written;
}  // namespace

void note_written_text(const std::filesystem::path& path, std::string_view text) {
  last_written.path = path;
  last_written.text = text;
  last_written.noted = true;
}

void forget_written_text() { last_written.noted = false; }

const std::string_view* written_text(const std::filesystem::path& path) {
  if (!last_written.noted || last_written.path.native() != path.native()) return nullptr;
  return &last_written.text;
}

}  // namespace imflow
