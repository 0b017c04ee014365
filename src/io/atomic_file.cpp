// AtomicOutput: temporary name + (optional fsync) + rename.
#include "imflow/io/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "imflow/errors.hpp"

namespace imflow {

namespace fs = std::filesystem;

namespace {
std::atomic<unsigned long> temp_counter{0};
std::atomic<bool> output_fsync{false};

void fsync_path(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}
}  // namespace

AtomicOutput::AtomicOutput(fs::path final_path) : final_(std::move(final_path)) {
  std::error_code error;
  if (final_.has_parent_path()) fs::create_directories(final_.parent_path(), error);
  if (error) {
    throw OutputError(final_.parent_path().string() + ": cannot create directory: " + error.message());
  }
  temp_ = final_.parent_path() / ("." + final_.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                                  std::to_string(temp_counter++));
}

AtomicOutput::~AtomicOutput() {
  if (!committed_) {
    std::error_code ignored;
    fs::remove(temp_, ignored);
  }
}

void AtomicOutput::commit() {
  if (output_fsync) fsync_path(temp_);
  if (::rename(temp_.c_str(), final_.c_str()) != 0) {
    throw OutputError(final_.string() + ": cannot rename the finished file into place: " + std::strerror(errno));
  }
  committed_ = true;
}

void set_output_fsync(bool enabled) { output_fsync = enabled; }

void write_text_atomic(const fs::path& path, const std::string& text) {
  AtomicOutput output(path);
  {
    std::ofstream stream(output.temp_path(), std::ios::binary);
    stream << text;
    stream.flush();
    if (!stream) throw OutputError(path.string() + ": write failed: " + std::strerror(errno));
  }
  output.commit();
}

}  // namespace imflow
