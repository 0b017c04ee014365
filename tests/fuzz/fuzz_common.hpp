// Shared by the libFuzzer targets: the readers take paths, so each input is written to a
// per-process temporary file with the format's extension (removed when the process exits) and
// read back through the real API.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>

namespace imflow::fuzz {

struct TemporaryInput {
  std::filesystem::path path;
  ~TemporaryInput() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
};

// One file per extension, rewritten for every input.
inline std::filesystem::path input_file(const char* extension, const uint8_t* data, size_t size) {
  static std::map<std::string, TemporaryInput> inputs;
  TemporaryInput& input = inputs[extension];
  if (input.path.empty()) {
    input.path = std::filesystem::temp_directory_path() / ("imflow-fuzz-" + std::to_string(::getpid()) + extension);
  }
  if (FILE* file = std::fopen(input.path.c_str(), "wb")) {
    if (size > 0) std::fwrite(data, 1, size, file);
    std::fclose(file);
  }
  return input.path;
}

}  // namespace imflow::fuzz
