// CFITSIO's error messages in imflow's errors: FitsMessages (the process-wide stack read by one
// thread at a time) and fits_error_text.
#include <fitsio.h>

#include <filesystem>
#include <mutex>
#include <string>

#include "fits_status.hpp"

namespace imflow::detail {

namespace {
std::mutex stack_mutex;                   // held by the outermost FitsMessages of a thread
thread_local int scopes_on_this_thread = 0;

// A line of the stack worth repeating: not a file's name (CFITSIO pushes the names and URLs of the
// files it fails on as lines of their own: this one's, or one without a space, which may be
// another thread's file), nor the optional-column lookups of a tile-compressed HDU's open.
bool worth_reporting(const std::string& line, const std::filesystem::path& path) {
  return line.find(' ') != std::string::npos && line != path.string() &&
         line.rfind("ffgcnn could not find column", 0) != 0;
}
}  // namespace

FitsMessages::FitsMessages() {
  if (scopes_on_this_thread > 0) {
    ++scopes_on_this_thread;
    return;
  }
  static std::once_flag initialized;
  std::call_once(initialized, [] { fits_init_cfitsio(); });
  stack_mutex.lock();
  scopes_on_this_thread = 1;
  fits_clear_errmsg();
}

void FitsMessages::discard() const { fits_clear_errmsg(); }

FitsMessages::~FitsMessages() {
  if (--scopes_on_this_thread == 0) stack_mutex.unlock();
}

std::string fits_error_text(const std::filesystem::path& path, const std::string& what, int status) {
  char text[FLEN_STATUS] = {0};
  fits_get_errstatus(status, text);
  std::string reason = text;
  // CFITSIO 4.2 has no text for the tile-compression codes.
  if (status == DATA_COMPRESSION_ERR) reason = "error compressing a tile";
  if (status == DATA_DECOMPRESSION_ERR) reason = "error decompressing a tile (corrupt or truncated file)";
  if (status == NO_COMPRESSED_TILE) reason = "a compressed tile is missing (truncated file?)";
  std::string message = path.string() + ": " + what + ": CFITSIO error " + std::to_string(status) + " (" + reason + ")";
  if (scopes_on_this_thread == 0) return message;  // the stack may hold any thread's messages
  std::string details;
  char detail[FLEN_ERRMSG] = {0};
  while (fits_read_errmsg(detail) != 0) {
    std::string line = detail;
    for (char& c : line) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = ' ';
    }
    while (!line.empty() && (line.back() == ' ' || line.back() == ':')) line.pop_back();
    if (!worth_reporting(line, path) || details.size() > 400) continue;
    details += (details.empty() ? "" : "; ") + line;
  }
  if (!details.empty()) message += ": " + details;
  return message;
}

}  // namespace imflow::detail
